"""`warp-specialize`: automatic producer/consumer partitioning (Tawa section 4.1).

Input: a `tile.kernel` with no partitions.  Output: the same kernel as

    %r = aref.create : !aref.aref<[payload...], 1>     (one per group of loads)
    aref.partition producer warp_groups 1 regs 0 { ... aref.put %r[%it], loads ... }
    aref.partition consumer warp_groups 1 regs 0 { ... aref.get / tile.dot / aref.consumed ... }
    tile.return

Which op goes where is derived from the data flow, nothing in the input says it:
- *MMA operand loads* (2-d `tile.load`s whose every use is an operand of `tile.dot`) are
  TMA-able and go to the producer, with the backward slice of their coordinates and the
  bounds of their enclosing loops (scalars and loop control are duplicated).
- *Consumer tile loads* (2-d `tile.load`s that no `tile.dot` reads as an A or B operand:
  an epilogue's second matrix, D = alpha A B^T + beta C) go to the producer too, each
  through an aref of its own: TMA brings the tile into shared memory, the consumer reads
  it into its registers (`lower-aref`: `hopper.load_fragment`) and releases the slot.
  A load read both ways is an error.
- *Vector loads* (1-d `tile.load`s of a kernel without MMAs: a vector add, a row
  reduced to scalars, a norm's weight read beside its 2-d tiles) go to the producer too,
  each through an aref of its own: TMA copies the tile into shared memory in boxes of up
  to 256 elements and the consumer reads its runs, or the elements of its slice of a
  2-d tile's layout, from there (`lower-aref`: `hopper.load_fragment`). TMA fills the
  outside of the tensor with zeros, so a load padded with another value (`padding -inf`)
  is selected to it in the consumer past the tensor's last-dimension size (after the
  `arith.extf` to f32 of a 16-bit load: a `tile.iota`, `tile.dim`, `tile.cmpi`,
  `tile.select` on the received tile). A vector load the producer cannot issue stays the
  consumer's own (read from global memory by its threads): coordinates that depend on
  consumer-computed or loop-carried values, a load under an `scf.if` or in a nested
  loop, a stacked load, a tile TMA cannot copy in whole boxes of 16-byte multiples (a
  1-d tile of 2 f32, or of 300 elements), an element type other than f32, bf16 and f16,
  or a padded 16-bit load read other than through `arith.extf` to f32, and a load that
  comes after a scalar atomic in program order (`tawac.analysis.atomics`: a lock's
  critical section, read only once the program holds the lock).
- Everything else (MMAs, elementwise math, other 1-d loads, stores) goes to the consumer.
- The loads of one block that feed the same MMAs form one aref (a tuple payload: GEMM's A
  and B); loads feeding different MMAs get separate arefs (attention's K and V), so each
  slot is released as soon as its own MMA has read it.  One `put` per iteration in the
  producer; in the consumer one `get` where the first load was and one `consumed` after
  the last direct use of the payload.  `%it` is the iteration number of the enclosing
  `scf.for`, `(iv - lb) / step`, or 0 outside a loop.
- Scalar atomics (`tile.atomic_cas`, `tile.atomic_xchg`: a lock) stay in program order
  with the program's other accesses: the loads after one are the consumer's own, and a
  streamed load before one is received (its `get`) before it, so that a release follows
  the read. They are supported in a kernel of 1-d tiles that no pass before this one
  merged or split into other programs (`_check_atomics`, else a located error).
- Loops of the kernel's body one after the other share rings: a group of a later loop
  with the same kind and payload types as a group of an earlier one uses its aref (the
  second key loop of causal attention reuses the first's K and V rings, where rings of
  their own would halve every ring's depth); its `%it` adds the earlier loops' trip
  counts, so the ring's stream of transfers is numbered on across the loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    ModuleOp,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.dead_code_elimination import region_dce

from tawac.analysis.arefs import last_reader
from tawac.analysis.atomics import AtomicOrder, scalar_atomics
from tawac.analysis.grid import DECOMPOSITION_ATTR, GROUP_ATTR
from tawac.analysis.identity import argument_name, joined, unique_names
from tawac.analysis.loops import trip_count
from tawac.analysis.mma import dots_in, is_consumer_tile_load, is_mma_operand_load, mma_uses
from tawac.analysis.scalars import SCALAR_OPS
from tawac.dialects import aref, tile
from tawac.support.diagnostics import CompileError, location_of
from tawac.target.layouts import LinearTile


def _check_not_mixed(op: Operation) -> None:
    """A 2-d load read both as an MMA operand and by other ops would need its slot in
    shared memory and its registers at once."""
    flags = mma_uses(op)
    if flags and any(flags) and not all(flags):
        raise CompileError(
            "warp-specialize: this tile.load is read both as a tile.dot operand and by other "
            "ops, which is not supported yet; load the tile twice (one load for the MMA, "
            "one for the math)",
            op,
        )


@dataclass
class _Group:
    """The MMA operand loads of one block feeding the same dots (kind "mma"), or one
    consumer tile load (kind "math"): one aref."""

    block: Block
    loads: list[tile.LoadOp]
    kind: str = "mma"

    @property
    def what(self) -> str:
        return _LOAD_NAMES[self.kind][0]

    @property
    def whats(self) -> str:
        return _LOAD_NAMES[self.kind][1]


# How diagnostics name the loads of a group of each kind (one, several).
_LOAD_NAMES = {
    "mma": ("an MMA operand load", "MMA operand loads"),
    "math": ("a 2-d tile.load read by consumer math", "2-d tile.loads read by consumer math"),
    "vector": ("a 1-d tile.load", "1-d tile.loads"),
}

#: Element types of the vector loads TMA streams (a tensor map's data type each).
_VECTOR_TYPES = (Float32Type, BFloat16Type, Float16Type)


def _producer_slice(kernel: tile.KernelOp, groups: list[_Group]) -> set[Operation]:
    """The loads plus every op they need (coordinates, enclosing loop bounds)."""
    keep: set[Operation] = set()
    work: list[tuple[SSAValue, str]] = []
    for g in groups:
        for ld in g.loads:
            keep.add(ld)
            work.extend((v, g.what) for v in ld.operands)
        block: Block | None = g.block
        while block is not None and block.parent_op() is not kernel:
            loop = block.parent_op()
            if isinstance(loop, scf.ForOp):
                work.extend((v, g.what) for v in (loop.lb, loop.ub, loop.step))
            block = loop.parent_block() if loop is not None else None
    while work:
        v, what = work.pop()
        owner = v.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if parent is kernel:
                continue  # kernel argument
            if isinstance(parent, scf.ForOp) and v is parent.body.block.args[0]:
                continue  # induction variable
            raise CompileError(
                f"warp-specialize: the coordinates of {what} depend on a "
                "loop-carried value, which the producer warp group cannot compute",
                parent,
            )
        if owner in keep:
            continue
        if not isinstance(owner, SCALAR_OPS):
            raise CompileError(
                f"warp-specialize: the coordinates of {what} depend on "
                f"'{owner.name}', which the producer warp group cannot compute",
                owner,
            )
        keep.add(owner)
        work.extend((o, what) for o in owner.operands)
    return keep


def _top_loop(g: _Group, kernel: tile.KernelOp) -> scf.ForOp | None:
    """The loop of the kernel's body whose body holds the group's loads, if any."""
    loop = g.block.parent_op()
    if isinstance(loop, scf.ForOp) and loop.parent_block() is kernel.body.block:
        return loop
    return None


def _shared_rings(kernel: tile.KernelOp, groups: list[_Group]) -> list[int]:
    """Per group, the index of the group whose aref it uses (itself, or a group of an
    earlier loop of the kernel's body with the same kind and payload types, which no
    other group of its loop took: the K and V of causal attention's second loop reuse
    the first loop's rings). Both partitions run the loops in the same order, so the
    ring carries one stream of transfers, numbered on across the loops."""
    out = list(range(len(groups)))
    loops = {i: _top_loop(g, kernel) for i, g in enumerate(groups)}
    for i, g in enumerate(groups):
        if loops[i] is None:
            continue
        key = (g.kind, [ld.result.type for ld in g.loads])
        taken = {out[j] for j in range(i) if loops[j] is loops[i]}
        for j in range(i):
            if out[j] != j or j in taken or loops[j] is None or loops[j] is loops[i]:
                continue
            if (groups[j].kind, [ld.result.type for ld in groups[j].loads]) == key:
                out[i] = j
                break
    return out


def _earlier_loops(groups: list[_Group], arefs: list[SSAValue]) -> dict[int, list[scf.ForOp]]:
    """Per group (by id), the earlier loops whose transfers go through its aref: the
    group's transfers are numbered after theirs."""
    out: dict[int, list[scf.ForOp]] = {}
    for i, g in enumerate(groups):
        loops = []
        for j in range(i):
            if arefs[j] is not arefs[i]:
                continue
            loop = groups[j].block.parent_op()
            if (
                isinstance(loop, scf.ForOp)
                and loop is not g.block.parent_op()
                and loop not in loops
            ):
                loops.append(loop)
        out[id(g)] = loops
    return out


def _contains(op: Operation, keep: set[Operation]) -> bool:
    return any(o in keep for o in op.walk())


def _iteration_index(
    block: Block, mapping: dict[SSAValue, SSAValue], before: list[scf.ForOp] = ()
) -> tuple[list[Operation], SSAValue]:
    """Ops computing `(iv - lb) / step` of the (cloned) loop owning `block`, or 0; plus
    the trip counts of the loops `before` (original loops whose bounds `mapping` maps to
    this partition's) that move data through the same aref."""
    loop = block.parent_op()
    if not isinstance(loop, scf.ForOp):
        c0 = arith.ConstantOp.from_int_and_width(0, IndexType())
        return [c0], c0.result
    iv = block.args[0]
    sub = arith.SubiOp(iv, loop.lb)
    div = arith.DivUIOp(sub.result, loop.step)
    sub.result.name_hint = "rel"
    div.result.name_hint = "it"
    ops: list[Operation] = [sub, div]
    it = div.result
    for prev in before:
        trips = trip_count(*(mapping.get(v, v) for v in (prev.lb, prev.ub, prev.step)))
        total = arith.AddiOp(it, trips[-1].results[0])
        total.result.name_hint = "it"
        ops += [*trips, total]
        it = total.result
    return ops, it


class _ProducerBuilder:
    def __init__(self, keep: set[Operation], groups: list[_Group], arefs: list[SSAValue]):
        self.keep = keep
        self.put_after = {g.loads[-1]: (g, r) for g, r in zip(groups, arefs, strict=True)}
        self.mapping: dict[SSAValue, SSAValue] = {}
        self.before = _earlier_loops(groups, arefs)

    def clone_block(self, src: Block, dst: Block) -> None:
        for op in src.ops:
            if isinstance(op, scf.ForOp) and _contains(op, self.keep):
                dst.add_op(self._clone_loop(op))
                continue
            if op not in self.keep:
                continue
            new = op.clone(self.mapping)
            if isinstance(new, tile.LoadOp) and new.padding is not None:
                del new.properties["padding"]  # TMA's zeros; the consumer selects the padding
            dst.add_op(new)
            if op in self.put_after:
                self._put(*self.put_after[op], dst)

    def _clone_loop(self, loop: scf.ForOp) -> scf.ForOp:
        m = self.mapping
        body = Block(arg_types=[IndexType()])
        new = scf.ForOp(
            m.get(loop.lb, loop.lb),
            m.get(loop.ub, loop.ub),
            m.get(loop.step, loop.step),
            [],
            Region(body),
        )
        new.location = loop.location
        m[loop.body.block.args[0]] = body.args[0]
        body.args[0].name_hint = loop.body.block.args[0].name_hint
        self.clone_block(loop.body.block, body)
        body.add_op(scf.YieldOp())
        return new

    def _put(self, g: _Group, ref: SSAValue, dst: Block) -> None:
        ops, it = _iteration_index(dst, self.mapping, self.before[id(g)])
        for o in ops:
            dst.add_op(o)
        dst.add_op(aref.PutOp(ref, it, [self.mapping[ld.result] for ld in g.loads]))


def _consumer(kernel: tile.KernelOp, groups: list[_Group], arefs: list[SSAValue]) -> Block:
    mapping: dict[SSAValue, SSAValue] = {}
    before = _earlier_loops(groups, arefs)
    dst = Block()
    for op in kernel.body.block.ops:
        if isinstance(op, tile.ReturnOp | aref.CreateOp):
            continue
        dst.add_op(op.clone(mapping))
    for g, ref in zip(groups, arefs, strict=True):
        loads = [mapping[ld.result].owner for ld in g.loads]
        first = loads[0]
        assert isinstance(first, Operation)
        block = first.parent_block()
        assert block is not None
        # The get goes right before the first use of the payload: the consumer waits
        # for the transfer only when it needs it.
        users = [
            block.find_ancestor_op_in_block(u.operation) for ld in loads for u in ld.results[0].uses
        ]
        at = min((u for u in users if u is not None), key=block.get_operation_index)
        fence = _next_atomic(first)
        if fence is not None and block.get_operation_index(fence) < block.get_operation_index(at):
            at = fence  # received before a release that follows the load
        ops, it = _iteration_index(block, mapping, before[id(g)])
        get = aref.GetOp(ref, it)
        get.location = first.location
        Rewriter.insert_op([*ops, get], InsertPoint.before(at))
        for ld, v in zip(loads, get.values, strict=True):
            assert isinstance(ld, tile.LoadOp)
            v.name_hint = ld.result.name_hint
            ld.result.replace_all_uses_with(v)
            if not ld.zero_padded:
                _select_padding(ld, v, get)
            Rewriter.erase_op(ld)
        Rewriter.insert_op(aref.ConsumedOp(ref, it), InsertPoint.after(last_reader(get)))
    region = Region(dst)
    region_dce(region)
    stores = [o for o in region.walk() if isinstance(o, tile.StoreOp)]
    for st, name in zip(
        stores, unique_names(argument_name(st.dest, kernel) for st in stores), strict=True
    ):
        st.attributes[tile.STORE_ID] = StringAttr(name)
    return region.detach_block(0)


def _next_atomic(op: Operation) -> Operation | None:
    """The first op after `op` in its block that is or holds a scalar atomic, if any."""
    nxt = op.next_op
    while nxt is not None:
        if any(isinstance(o, tile.SCALAR_ATOMICS) for o in nxt.walk()):
            return nxt
        nxt = nxt.next_op
    return None


def _select_padding(ld: tile.LoadOp, value: SSAValue, get: aref.GetOp) -> None:
    """The received 1-d tile `value` (TMA's zeros outside the tensor) selected to `ld`'s
    padding at the coordinates at or past the tensor's last-dimension size: right after
    the get for an f32 tile, after each `arith.extf` to f32 of a 16-bit one."""
    t = value.type
    assert isinstance(t, TensorType)
    src = ld.source.type
    assert isinstance(src, tile.GlobalTensorType)
    mask_type = TensorType(i32, t.get_shape())
    f32_type = TensorType(Float32Type(), t.get_shape())
    widened = _padded_uses(ld.result.type, [u.operation for u in value.uses])
    assert widened is not None
    sites = [(e.result, e) for e in widened] if widened else [(value, get)]
    for v, after in sites:
        users = list(v.uses)
        pad = arith.ConstantOp(FloatAttr(ld.padding_value, Float32Type()))
        ops: list[Operation] = [
            pad,
            pads := tile.SplatOp.create(operands=[pad.result], result_types=[f32_type]),
            coords := tile.IotaOp(0, ld.indices[-1], mask_type),
            size := tile.DimOp(ld.source, src.rank - 1),
            extent := tile.SplatOp.create(operands=[size.result], result_types=[mask_type]),
            inside := tile.CmpiOp("slt", coords.result, extent.result),
            sel := tile.SelectOp(inside.result, v, pads.results[0]),
        ]
        for o in ops:
            o.location = ld.location
        sel.result.name_hint = v.name_hint
        Rewriter.insert_op(ops, InsertPoint.after(after))
        for use in users:
            use.operation.operands[use.index] = sel.result


def _padded_uses(t: Attribute, users: list[Operation]) -> list[arith.ExtFOp] | None:
    """Where a padded vector load's selects go: [] for an f32 tile (on the tile itself),
    the `arith.extf`s to f32 that are every use of a 16-bit one, else None."""
    assert isinstance(t, TensorType)
    if isinstance(t.element_type, Float32Type):
        return []
    f32_ext = [
        u
        for u in users
        if isinstance(u, arith.ExtFOp)
        and isinstance(u.result.type, TensorType)
        and isinstance(u.result.type.element_type, Float32Type)
    ]
    return f32_ext if users and len(f32_ext) == len(users) else None


def _vector_groups(kernel: tile.KernelOp) -> list[_Group]:
    """The 1-d loads of a kernel without MMAs that the producer streams, one group each
    (module docstring: the others stay the consumer's own)."""
    if dots_in(kernel):
        return []
    groups = []
    order = AtomicOrder(kernel)
    for op in kernel.walk():
        if not isinstance(op, tile.LoadOp) or not op.result.uses or op.stack is not None:
            continue
        if order.after(op) is not None:
            continue  # a lock's critical section: read after the acquire, by the consumer
        t = op.result.type
        assert isinstance(t, TensorType)
        elem = t.element_type
        if not isinstance(elem, _VECTOR_TYPES) or t.get_num_dims() != 1:
            continue
        if LinearTile.problem(t.get_shape()[0], elem.bitwidth // 8) is not None:
            continue
        if not op.zero_padded and _padded_uses(t, [u.operation for u in op.result.uses]) is None:
            continue
        block = op.parent_block()
        assert block is not None
        g = _Group(block, [op], "vector")
        if _nesting_problem(g, kernel) is not None:
            continue
        try:
            _producer_slice(kernel, [g])
        except CompileError:
            continue  # coordinates the producer cannot compute
        groups.append(g)
    return groups


def _nesting_problem(g: _Group, kernel: tile.KernelOp) -> str | None:
    """Why the producer cannot issue the group's loads where they are (under an op other
    than scf.for, or in a nested loop), or None."""
    loops = 0
    block: Block | None = g.block
    while block is not None and block.parent_op() is not kernel:
        parent = block.parent_op()
        assert parent is not None
        if not isinstance(parent, scf.ForOp):
            return (
                f"warp-specialize: {g.whats} inside '{parent.name}' are not supported yet "
                "(only directly in the kernel or in an scf.for)"
            )
        loops += 1
        block = parent.parent_block()
    if loops > 1:
        return (
            f"warp-specialize: {g.whats} in a loop nested inside another loop are not "
            "supported yet (transfers are numbered by the innermost loop)"
        )
    return None


def _no_producer(kernel: tile.KernelOp) -> CompileError:
    """No tile.load is an MMA operand: without a tile.dot, the kernel is one the pass does
    not support yet; with one, the error names what its A and B are instead, at the first
    op standing between a tile.load and the dot (a `tl.where` the conversion kept, also
    under guard-masks' scf.if), else at the dot."""
    dot = next((o for o in kernel.walk() if isinstance(o, tile.DotOp)), None)
    if dot is None:
        return CompileError(
            "warp-specialize: a kernel without MMAs needs a 2-d tile.load for the producer "
            "warp group to stream (or tiles that are all 1-d, which its consumer loads itself)",
            kernel,
        )
    parts, between = [], None
    for side, v in (("A", dot.lhs), ("B", dot.rhs)):
        what, at = _feeding(v)
        parts.append(f"{side} is {what}")
        if between is None and at is not None and isinstance(at.location, FileLineColLoc):
            between = at  # located where it is written, else the error points at the dot
    where = location_of(dot)
    at_dot = f"the tile.dot at {where}" if where is not None else "a tile.dot"
    return CompileError(
        f"warp-specialize: the operands of {at_dot} are not tile.loads ({', '.join(parts)}), "
        "so there is nothing for a producer warp group to do (an MMA operand must be a "
        "2-d tile.load that only tile.dots read)",
        between or dot,
    )


def _feeding(v: SSAValue, depth: int = 0) -> tuple[str, Operation | None]:
    """What computes the dot operand `v`, and the op on the way that reads a tile.load
    (through the yields of an scf.if), if any."""
    op = v.owner
    if not isinstance(op, Operation):
        return "a block argument", None
    if isinstance(op, scf.IfOp) and depth < 8:
        for region in op.regions:
            y = region.blocks[0].last_op if region.blocks else None
            if isinstance(y, scf.YieldOp):
                what, at = _feeding(y.operands[v.index], depth + 1)
                if at is not None:
                    return f"{what} under an scf.if", at
        return "an scf.if", None
    if any(isinstance(x.owner, tile.LoadOp) for x in op.operands):
        return f"a {op.name} of a tile.load", op
    return f"a {op.name}", None


def _check_lowerable(kernel: tile.KernelOp) -> None:
    """Refuse what the passes after this one cannot lower yet (the interpreter runs it): a
    load whose outside reads as something other than zero (TMA fills it with zeros), but
    in a kernel of 1-d tiles only (the consumer selects the padding on each streamed load,
    `_select_padding`, and pads the loads it makes itself). A kernel with 2-d tiles has
    its 2-d loads padded by `pad-loads` before this pass."""
    vectors_only = _vectors_only(kernel)
    for op in kernel.walk():
        if isinstance(op, tile.LoadOp) and not op.zero_padded and not vectors_only:
            raise CompileError(
                "warp-specialize: a tile.load padded with a value other than 0 is not "
                "supported yet (TMA fills the outside of a tensor with zeros)",
                op,
            )


#: The attributes of the passes that merge or split programs (`group-heads`, `split-k`,
#: `swap-ab`, `widen`), by the pass that sets each.
_REWRITTEN = {
    GROUP_ATTR: "group-heads",
    DECOMPOSITION_ATTR: "split-k or swap-ab",
    "tawac.widen": "widen",
}


def _check_atomics(kernel: tile.KernelOp) -> None:
    """Refuse, at the first scalar atomic, what cannot keep a lock's order: a kernel with
    2-d tiles (its loads stream through the producer's TMA and its stores may leave
    through shared memory and TMA, neither of which waits for the consumer's acquire or
    completes before its release) and a kernel whose programs a pass merged or split
    (the atomic would run once per new program, not once per program written)."""
    atomics = scalar_atomics(kernel)
    if not atomics:
        return
    first = atomics[0]
    for attr, rewritten_by in _REWRITTEN.items():
        if attr in kernel.attributes:
            raise CompileError(
                f"warp-specialize: {first.name} in a kernel that {rewritten_by} rewrote into "
                "other programs (each would run it, where it runs once per program as "
                f"written): turn {rewritten_by} off",
                first,
            )
    if not _vectors_only(kernel):
        raise CompileError(
            f"warp-specialize: {first.name} in a kernel with 2-d tiles is not supported "
            "yet: its 2-d loads stream through the producer's TMA, which does not wait for "
            "the program's acquire (a kernel of 1-d tiles keeps them in order)",
            first,
        )


def _vectors_only(kernel: tile.KernelOp) -> bool:
    """A kernel whose tiles are all 1-d (a vector add, a row reduced to a scalar)."""
    tiles = [r.type for op in kernel.walk() for r in op.results if isinstance(r.type, TensorType)]
    return bool(tiles) and all(t.get_num_dims() == 1 for t in tiles)


def specialize(kernel: tile.KernelOp) -> None:
    body = kernel.body.block
    if any(isinstance(o, aref.PartitionOp) for o in body.ops):
        raise CompileError("warp-specialize: kernel is already partitioned", kernel)
    written = next((o for o in kernel.walk() if o.dialect_name() == "aref"), None)
    if written is not None:
        raise CompileError(
            f"warp-specialize: '{written.name}' in a kernel that is not partitioned: the "
            "compiler places the arefs when it partitions a tile program (write the loads "
            "and the math it reads)",
            written,
        )
    _check_lowerable(kernel)
    _check_atomics(kernel)
    groups: dict[tuple[Block, frozenset[Operation]], _Group] = {}
    for op in kernel.walk():
        if not is_mma_operand_load(op):
            continue
        block = op.parent_block()
        assert block is not None
        dots = frozenset(u.operation for u in op.results[0].uses)
        key = (block, dots)
        groups.setdefault(key, _Group(block, [])).loads.append(op)  # type: ignore[arg-type]
    # loads read by consumer math stream through arefs of their own where MMA operands
    # stream, and in a kernel without MMAs (its 2-d tiles read into consumer registers)
    stream_math = bool(groups) or not any(isinstance(o, tile.DotOp) for o in kernel.walk())
    for op in kernel.walk():
        _check_not_mixed(op)
        if stream_math and is_consumer_tile_load(op):
            block = op.parent_block()
            assert block is not None and isinstance(op, tile.LoadOp)
            groups[(block, frozenset([op]))] = _Group(block, [op], "math")
    if not groups and not _vectors_only(kernel):
        raise _no_producer(kernel)
    group_list = list(groups.values()) + _vector_groups(kernel)
    for g in group_list:
        problem = _nesting_problem(g, kernel)
        if problem is not None:
            raise CompileError(problem, g.loads[0])
    keep = _producer_slice(kernel, group_list)

    ring = _shared_rings(kernel, group_list)
    firsts = [g for i, g in enumerate(group_list) if ring[i] == i]
    names = unique_names(joined((ld.source for ld in g.loads), kernel) for g in firsts)
    creates = [
        aref.CreateOp(aref.ArefType([ld.result.type for ld in g.loads], 1), name)
        for g, name in zip(firsts, names, strict=True)
    ]
    for c, g in zip(creates, firsts, strict=True):
        c.location = g.loads[0].location  # diagnostics about the aref point at its loads
    for i, c in enumerate(creates):
        c.result.name_hint = f"aref{i}"
    by_first = {id(g): c.result for g, c in zip(firsts, creates, strict=True)}
    refs = [by_first[id(group_list[ring[i]])] for i in range(len(group_list))]

    producer = Block()
    _ProducerBuilder(keep, group_list, refs).clone_block(body, producer)
    consumer = _consumer(kernel, group_list, refs)

    ret = body.last_op
    assert isinstance(ret, tile.ReturnOp)
    for op in reversed(list(body.ops)):
        if op is not ret:
            op.detach()
            op.erase(safe_erase=False)
    new_ops: list[Operation] = [
        *creates,
        aref.PartitionOp("producer", 1, 0, Region(producer)),
        aref.PartitionOp("consumer", 1, 0, Region(consumer)),
    ]
    Rewriter.insert_op(new_ops, InsertPoint.before(ret))


@dataclass(frozen=True)
class WarpSpecializePass(ModulePass):
    name = "warp-specialize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in list(op.walk()):
            if isinstance(k, tile.KernelOp):
                specialize(k)
