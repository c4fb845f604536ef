"""`widen`: one tile for N programs of grid axis x that are neighbours along the rows, as a
rewrite of the tile program.  Runs after `group-heads` and `split-k`, before
`warp-specialize`; does nothing to a kernel it cannot widen.

A program whose tiles have 64 rows (`BLOCK_M = 64`) gets one consumer warp group: each
wgmma is m64, and with a single issuing warp group the tensor core waits whenever that
group waits (its MMA's completion, its softmax).  Two programs x = 2i and 2i + 1 read the
same columns (B, K, V) and adjacent rows; as one tile of 128 rows they are the 128-row
program, which `cooperative-consumers` gives two warp groups of 64 rows each: the same
registers per thread, the shared operand loaded once, and two warp groups issuing MMAs.

Input: a kernel whose program id x is used only as `program_id(x) * BM` (`m0`, any number
of such products with the same BM), and `m0` only
  * as the coordinate of a tile dimension of `tile.load` / `tile.store` /
    `tile.atomic_add` (not a leading coordinate, not a stacked load), and
  * as the offset of a `tile.iota` along a dimension (a mask's row positions);
where every tile dimension such a coordinate places is BM long, and the dimensions tied to
them through the program (elementwise math, `tile.dot`'s M, `tile.broadcast`,
`tile.reduce` along another dimension, loop-carried and `scf.if` values) are rows only:
never a dot's K or N, never reduced, never a coordinate other than `m0`.
Output: the same program with `m0 = program_id(x) * (N * BM)` and every such dimension N
times as long.  The grid follows from the stores (`infer_grid`): ceil(M / (N * BM))
programs along x.  Rows past the tensor's end read as zeros and are not stored, as in
any ragged tile.  `tawac.widen` records the decision (`explain`).

The decision (`tawac.schedule.widen`): with `by=0` (auto), N = 2 where the rows are one
m64 block and the widened tiles fit in shared memory; `by=N` asks for N (a located error
where the kernel cannot be widened); `by=1` is off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import DECOMPOSITION_ATTR, GRID_ATTR, GROUP_ATTR, to_attr
from tawac.analysis.kinds import streams_tiles
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile
from tawac.schedule import widen as rule
from tawac.support.diagnostics import CompileError
from tawac.target.hopper import HOPPER

WIDEN_ATTR = "tawac.widen"

_Key = tuple[SSAValue, int]

# ops whose tensor operands and results are elementwise alike (same shape, axis by axis)
_ELEMENTWISE_DIALECTS = ("arith.", "math.")
_ELEMENTWISE_TILE = (tile.CmpiOp, tile.SelectOp)
# ops that make a tile from scalars only: they take whatever shape their users need
_FREE = (tile.SplatOp, tile.IotaOp, arith.ConstantOp)


@dataclass
class _Axes:
    """Union-find over (tensor value, dimension)."""

    parent: dict[_Key, _Key] = field(default_factory=dict)

    def find(self, k: _Key) -> _Key:
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: _Key, b: _Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def _rank(v: SSAValue) -> int | None:
    t = v.type
    return t.get_num_dims() if isinstance(t, TensorType) else None


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


@dataclass
class _Facts:
    """What the walk over the kernel found."""

    axes: _Axes = field(default_factory=_Axes)
    # (value, dim) of a tile dimension placed by a coordinate, and that coordinate
    placed: list[tuple[_Key, SSAValue]] = field(default_factory=list)
    # leading coordinates of loads and stores (one element of that dimension)
    leading: list[SSAValue] = field(default_factory=list)
    iotas: list[tile.IotaOp] = field(default_factory=list)
    # dimensions rows must not be, and what they are instead
    forbidden: list[tuple[_Key, str]] = field(default_factory=list)
    refused: str | None = None


def _tie_same(axes: _Axes, values: list[SSAValue]) -> bool:
    """Ties the dimensions of tensors of one shape position by position; False where the
    shapes differ."""
    tensors = [v for v in values if _rank(v) is not None]
    if not tensors:
        return True
    shape = _shape(tensors[0])
    if any(_shape(v) != shape for v in tensors):
        return False
    for v in tensors[1:]:
        for d in range(len(shape)):
            axes.union((tensors[0], d), (v, d))
    return True


def _access(facts: _Facts, op: tile.LoadOp | tile.StoreOp | tile.AtomicAddOp) -> None:
    value = op.result if isinstance(op, tile.LoadOp) else op.value
    rank = _rank(value)
    idx = list(op.indices)
    if rank is None:
        return
    lead = len(idx) - rank
    facts.leading.extend(idx[:lead])
    if tile.stack_of(op) > 1:
        # a stacked tile's rows come from several heads: only its columns are plain
        facts.leading.append(idx[lead])
        facts.forbidden.append(((value, 0), "the rows of a stacked load"))
        facts.placed.append(((value, 1), idx[lead + 1]))
        return
    for d in range(rank):
        facts.placed.append(((value, d), idx[lead + d]))


def _walk(kernel: tile.KernelOp) -> _Facts:
    facts = _Facts()
    axes = facts.axes
    for op in kernel.walk():
        if facts.refused is not None:
            break
        tensors = [v for v in (*op.operands, *op.results) if _rank(v) is not None]
        if isinstance(op, tile.LoadOp | tile.StoreOp | tile.AtomicAddOp):
            _access(facts, op)
        elif isinstance(op, tile.DotOp):
            lhs_m, lhs_k = (1, 0) if op.transpose_lhs is not None else (0, 1)
            rhs_k, rhs_n = (1, 0) if op.transpose_rhs is not None else (0, 1)
            axes.union((op.lhs, lhs_m), (op.acc, 0))
            axes.union((op.acc, 0), (op.result, 0))
            axes.union((op.rhs, rhs_n), (op.acc, 1))
            axes.union((op.acc, 1), (op.result, 1))
            axes.union((op.lhs, lhs_k), (op.rhs, rhs_k))
            facts.forbidden.append(((op.lhs, lhs_k), "a dot's K"))
            facts.forbidden.append(((op.result, 1), "a dot's N"))
        elif isinstance(op, tile.ReduceOp):
            d = op.dim.data
            kept = 1 - d
            axes.union((op.source, kept), (op.result, 0))
            facts.forbidden.append(((op.source, d), "a reduced dimension"))
        elif isinstance(op, tile.BroadcastOp):
            axes.union((op.source, 0), (op.result, op.dim.data))
        elif isinstance(op, tile.IotaOp):
            facts.iotas.append(op)
        elif isinstance(op, _FREE):
            if isinstance(op, arith.ConstantOp) and _rank(op.result) is not None:
                if not isinstance(op.value, DenseIntOrFPElementsAttr) or not op.value.is_splat():
                    facts.forbidden.append(((op.result, 0), "a constant tile"))
                    facts.forbidden.append(((op.result, 1), "a constant tile"))
        elif isinstance(op, scf.ForOp):
            body = op.body.block
            for i, (init, res) in enumerate(zip(op.iter_args, op.results, strict=True)):
                if not _tie_same(axes, [init, res, body.args[i + 1]]):
                    facts.refused = "a loop-carried value changes shape"
        elif isinstance(op, scf.YieldOp):
            parent = op.parent_op()
            if not isinstance(parent, scf.ForOp | scf.IfOp):
                facts.refused = f"a yield in {parent.name if parent else 'nothing'}"
                continue
            for v, res in zip(op.operands, parent.results, strict=True):
                if not _tie_same(axes, [v, res]):
                    facts.refused = "a yielded value changes shape"
        elif isinstance(op, scf.IfOp):
            continue
        elif not tensors:
            continue
        elif op.name.startswith(_ELEMENTWISE_DIALECTS) or isinstance(op, _ELEMENTWISE_TILE):
            if not _tie_same(axes, tensors):
                facts.refused = f"{op.name} mixes tile shapes"
        else:
            facts.refused = f"{op.name} on a tile"
    return facts


@dataclass
class Widening:
    """How a kernel widens: its program-id products `m0`, BM, and the rows' class."""

    muls: list[arith.MuliOp]
    rows: int
    root: _Key
    axes: _Axes


def _row_products(kernel: tile.KernelOp) -> tuple[list[arith.MuliOp], int] | str:
    """The `program_id(x) * BM` products and BM, or why there are none to widen."""
    pids = [o for o in kernel.walk() if isinstance(o, tile.ProgramIdOp) and o.axis.data == 0]
    if not pids:
        return "it has no program id x"
    muls: list[arith.MuliOp] = []
    rows: set[int] = set()
    for pid in pids:
        for use in pid.result.uses:
            mul = use.operation
            if not isinstance(mul, arith.MuliOp):
                return f"program id x is used by {mul.name}, not only times a block size"
            c = constant_int(mul.rhs if mul.lhs is pid.result else mul.lhs)
            if c is None or c <= 0:
                return "program id x is multiplied by a value that is not a constant"
            muls.append(mul)
            rows.add(c)
    if len(rows) != 1:
        return f"program id x is multiplied by several block sizes {sorted(rows)}"
    return muls, rows.pop()


def analyse(kernel: tile.KernelOp) -> Widening | str:
    """How `kernel` widens along x (the module docstring), or why it does not."""
    for attr in (GRID_ATTR, GROUP_ATTR, DECOMPOSITION_ATTR, WIDEN_ATTR):
        if attr in kernel.attributes:
            return f"the kernel is already decomposed ({attr})"
    found = _row_products(kernel)
    if isinstance(found, str):
        return found
    muls, bm = found
    m0s = {m.result for m in muls}
    facts = _walk(kernel)
    if facts.refused is not None:
        return facts.refused
    axes = facts.axes
    for mul in muls:
        for use in mul.result.uses:
            op = use.operation
            if not isinstance(op, tile.LoadOp | tile.StoreOp | tile.AtomicAddOp | tile.IotaOp):
                return f"the rows' origin is used by {op.name}"
    if any(i in m0s for i in facts.leading):
        return "the rows' origin is a leading coordinate"
    seeds = [key for key, idx in facts.placed if idx in m0s]
    if not seeds:
        return "no tile is placed at the rows' origin"
    root = axes.find(seeds[0])
    for key in seeds[1:]:
        axes.union(key, root)
    root = axes.find(root)
    for key, idx in facts.placed:
        if axes.find(key) == root and idx not in m0s:
            return "a row dimension is placed at another coordinate"
    for it in facts.iotas:
        along = axes.find((it.result, it.dim.data)) == root
        if along != (it.offset in m0s):
            return "a tile.iota mixes the rows with other positions"
    for key, what in facts.forbidden:
        if axes.find(key) == root:
            return f"the rows are {what}"
    for v, d in list(axes.parent):
        if axes.find((v, d)) == root and _shape(v)[d] != bm:
            return f"a row dimension is {_shape(v)[d]} long, not {bm}"
    return Widening(muls, bm, root, axes)


def _values(kernel: tile.KernelOp) -> list[SSAValue]:
    out: list[SSAValue] = []
    for op in kernel.walk():
        out.extend(op.results)
        for region in op.regions:
            for block in region.blocks:
                if op is not kernel:
                    out.extend(block.args)
    return out


def rewrite(kernel: tile.KernelOp, w: Widening, by: int) -> None:
    """Makes the tile of `kernel` `by` programs of x (the module docstring)."""
    idx = IndexType()
    for mul in w.muls:
        size = arith.ConstantOp.from_int_and_width(by * w.rows, idx)
        size.result.name_hint = "rows_per_tile"
        Rewriter.insert_op(size, InsertPoint.before(mul))
        which = 1 if constant_int(mul.rhs) is not None else 0
        old = mul.operands[which]
        mul.operands[which] = size.result
        if isinstance(old.owner, arith.ConstantOp) and not old.uses:
            Rewriter.erase_op(old.owner)
    for v in _values(kernel):
        t = v.type
        if not isinstance(t, TensorType):
            continue
        shape = list(t.get_shape())
        dims = [d for d in range(len(shape)) if w.axes.find((v, d)) == w.root]
        if not dims:
            continue
        for d in dims:
            shape[d] *= by
        new_type = TensorType(t.element_type, shape)
        owner = v.owner
        if isinstance(owner, arith.ConstantOp):
            value = owner.value
            assert isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat()
            first = next(iter(value.get_values()))
            splat = DenseIntOrFPElementsAttr.from_list(new_type, [first])
            Rewriter.replace_op(owner, arith.ConstantOp(splat, new_type))
            continue
        Rewriter.replace_value_with_new_type(v, new_type)
    kernel.attributes[WIDEN_ATTR] = to_attr({"programs": by, "rows": by * w.rows})


def widen_kernel(kernel: tile.KernelOp, by: int, smem_budget: int) -> int:
    """Widens `kernel` by `by` programs of x (0: the rule decides); the programs per tile
    it chose (1: unchanged)."""
    if by == 1:
        return 1
    found = analyse(kernel)
    if isinstance(found, str):
        if by > 1:
            raise CompileError(f"widen: cannot give one tile {by} programs of x: {found}", kernel)
        return 1
    if by == 0:
        by = rule.programs_per_tile(
            found.rows, _widened_bytes(kernel, found), smem_budget, streams_tiles(kernel)
        )
        if by == 1:
            return 1
    rewrite(kernel, found, by)
    return by


def _widened_bytes(kernel: tile.KernelOp, w: Widening) -> int:
    """The bytes of every tile the kernel loads, with the rows doubled."""
    wide = 0
    for op in kernel.walk():
        if not isinstance(op, tile.LoadOp) or _rank(op.result) is None:
            continue
        t = op.result.type
        assert isinstance(t, TensorType)
        n = t.element_count() * max(t.element_type.bitwidth // 8, 1)  # type: ignore[union-attr]
        rows = any(w.axes.find((op.result, d)) == w.root for d in range(t.get_num_dims()))
        wide += 2 * n if rows else n
    return wide


@dataclass(frozen=True)
class WidenPass(ModulePass):
    name = "widen"

    by: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.by < 0 or self.by > rule.MAX_PROGRAMS:
            raise CompileError(f"widen: by must be 0..{rule.MAX_PROGRAMS}, got {self.by}")
        for kernel in [o for o in op.body.block.ops if isinstance(o, tile.KernelOp)]:
            widen_kernel(kernel, self.by, HOPPER.smem_per_block)


__all__ = ["WIDEN_ATTR", "WidenPass", "analyse", "rewrite", "widen_kernel"]
