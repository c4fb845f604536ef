"""Shared state of the `convert-to-ptx` lowering.

The PTX element types, what a lowered value is (`Frag` registers, a `SmemTile`, a `Ring`
of shared slots, `Bars` of mbarriers), `KernelLowering` (emission helpers, the kernel's
structure: mbarrier init, `bar.sync 0`, one branch per warp-group partition with its
`setmaxnreg`) and the handler registry that the other modules of this package fill with
`@handles(OpType)`, plus helpers they share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue

from tawac import schedule
from tawac.analysis.grid import from_attr
from tawac.backend_ptx import abi
from tawac.backend_ptx.vector_layouts import TileLayout, VectorLayouts
from tawac.dialects import aref, hopper, ptx, tile
from tawac.schedule.smem import scratch_region
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, NamedBarriers, layouts
from tawac.target.layouts import AccLayout, BlockedLayout, IndexExpr


def elem_ptx_type(t: Attribute) -> str:
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    raise ValueError(f"no PTX type for {t}")


def elem_bytes(t: Attribute) -> int:
    return {"bf16": 2, "f16": 2, "f32": 4}[elem_ptx_type(t)]


@dataclass
class Frag:
    """A tile held in registers: `regs[i]` is register i of `layout` (regs may repeat for
    splats and broadcasts; such a fragment is materialised before being written).

    With `dim` set, the value is a 1-d tile in the slice layout of `layout`: a vector
    along dimension `dim` (`AccLayout.col_offsets()` / `row_offsets()` registers).  A
    standalone 1-d tile has a `BlockedLayout` and no `dim`."""

    layout: TileLayout | BlockedLayout
    regs: list[SSAValue]
    dtype: str  # PTX type of the elements: f32, bf16, f16, pred
    dim: int | None = None

    def like(self, regs: list[SSAValue], dtype: str) -> Frag:
        """A fragment of the same layout with other registers."""
        return Frag(self.layout, regs, dtype, self.dim)

    def same_layout(self, other: Frag) -> bool:
        if self.dim != other.dim:
            return False
        if self.dim is None:
            return self.layout == other.layout
        return self.layout.slice_key(self.dim) == other.layout.slice_key(other.dim)


@dataclass
class SmemTile:
    addr: SSAValue  # b32 shared-window address of the tile
    type: hopper.SmemTileType


@dataclass
class Ring:
    offset: int
    type: hopper.SmemRingType


@dataclass
class Bars:
    offset: int
    count: int


@dataclass
class _Partition:
    role: str
    first_wg: int
    warp_groups: int
    vectors: VectorLayouts | None = None
    trace: object | None = None  # trace.TraceState of an instrumented build


class KernelLowering:
    def __init__(self, kernel: tile.KernelOp, exp2_fma: int = 0, skip_rescale: bool = False):
        self.kernel = kernel
        self.exp2_fma = exp2_fma  # every N-th exp2 of a tile on the FMA pipe (0: none)
        self.skip_rescale = skip_rescale  # a warp's all-one rescale of a carried tile skipped
        self.block = Block()
        self.vals: dict[SSAValue, object] = {}
        self.params = abi.ParamTable(kernel)
        self.barriers = NamedBarriers()
        self.labels = 0
        self.part: _Partition | None = None
        self.scopes: list[dict[object, SSAValue]] = [{}]
        self.scratch_bytes = 0  # shared scratch after the planned shared memory
        #: The module's PTX ISA version: the target's, raised by an instruction that needs
        #: a later one (`require_ptx`).
        self.ptx_version = HOPPER.ptx_version

    # -- emission helpers -------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def r(self, op: Operation) -> SSAValue:
        """Emit an op and return its result."""
        self.emit(op)
        return op.results[0]

    def label(self, stem: str) -> str:
        self.labels += 1
        return f"$L_{stem}_{self.labels}"

    def cached(self, key: object, make: Callable[[], SSAValue]) -> SSAValue:
        """A value computed once per scope: reused only where its definition dominates."""
        for scope in reversed(self.scopes):
            value = scope.get(key)
            if value is not None:
                return value
        value = make()
        self.scopes[-1][key] = value
        return value

    @contextmanager
    def scope(self):
        """Code that does not dominate what follows it (a branch body, a loop body)."""
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    def l2_policy(self, priority: str | None) -> SSAValue | None:
        """The cache policy register of an L2 eviction `priority` (`createpolicy`, once per
        scope), or None without one."""
        if priority is None:
            return None
        return self.cached(("l2", priority), lambda: self.r(ptx.CreatePolicyOp(priority)))

    def store_hint(self, op: tile.StoreOp) -> SSAValue | None:
        """The cache policy of a `tile.store`'s global stores (its `l2` priority), or None."""
        return self.l2_policy(op.l2.data if op.l2 is not None else None)

    def imm(self, value: int, ty: str = "s32") -> SSAValue:
        """A register holding `value` (`cached`, inlined: the lowering's most frequent
        lookup)."""
        key = ("imm", ty, value)
        for scope in reversed(self.scopes):
            reg = scope.get(key)
            if reg is not None:
                return reg
        reg = self.scopes[-1][key] = self.r(ptx.MovImmOp(ty, value))
        return reg

    def fimm(self, value: float) -> SSAValue:
        return self.cached(("fimm", value), lambda: self.r(ptx.MovImmOp("f32", value)))

    def tid(self) -> SSAValue:
        return self.cached("tid", lambda: self.r(ptx.SpecialRegOp("tid.x")))

    def smem_base(self) -> SSAValue:
        return self.cached("smem", lambda: self.r(ptx.SharedBaseOp(abi.SMEM_SYMBOL)))

    def true_pred(self) -> SSAValue:
        one = self.imm(1)
        return self.cached("true", lambda: self.r(ptx.SetpOp("ne", "s32", one, self.imm(0))))

    def lane(self) -> SSAValue:
        return self.cached("lane", lambda: self._emit_index(layouts.LANE))

    def index(self, e: IndexExpr) -> SSAValue:
        """The PTX value of a layout's thread expression: `%tid.x` and the lane are
        computed once per scope, every other node is one instruction."""
        if e == layouts.TID:
            return self.tid()
        if e == layouts.LANE:
            return self.lane()
        return self._emit_index(e)

    def _emit_index(self, e: IndexExpr) -> SSAValue:
        """One PTX op for the node `e`: its operands first, left to right, then its
        constant."""
        match e:
            case layouts.Const(k):
                return self.imm(k)
            case layouts.MulAdd(x, k, y):
                x, y = self.index(x), self.index(y)
                return self.r(ptx.FmaOp("s32", x, self.imm(k), y))
            case layouts.Shr(x, k):
                return self.r(ptx.ShrOp("u32", self.index(x), self.imm(k)))
            case layouts.Shl(x, k):
                return self.r(ptx.ShlOp("b32", self.index(x), self.imm(k)))
            case layouts.And(x, k):
                return self.r(ptx.AndOp("b32", self.index(x), self.imm(k)))
            case layouts.Sub(x, k):
                return self.r(ptx.SubOp("s32", self.index(x), self.imm(k)))
            case layouts.Xor(x, y):
                x, y = self.index(x), self.index(y)
                return self.r(ptx.XorOp("b32", x, y))
        raise ValueError(f"no PTX for the thread expression {e}")

    def guarded(self, pred: SSAValue, body: Callable[[], None], negate: bool = False) -> None:
        """Run `body` where `pred` holds (or does not, with `negate`)."""
        skip = self.label("skip")
        self.emit(ptx.BraOp(skip, pred, negate=not negate))
        with self.scope():
            body()
        self.emit(ptx.LabelOp(skip))

    def add(self, a: SSAValue, b: SSAValue, ty: str = "s32") -> SSAValue:
        return self.r(ptx.AddOp(ty, a, b))

    def add_imm(self, a: SSAValue, k: int, ty: str = "s32") -> SSAValue:
        if k == 0:
            return a
        return self.add(a, self.imm(k, ty), ty)

    # -- values -----------------------------------------------------------------------------

    def scalar(self, v: SSAValue) -> SSAValue:
        x = self.vals.get(v)
        if x is None and isinstance(v, BlockArgument) and v.owner is self.kernel.body.block:
            name, ty = self.params.scalar(v)
            return self.cached(("param", name), lambda: self.r(ptx.LdParamOp(ty, name)))
        if not isinstance(x, SSAValue):
            raise CompileError(f"convert-to-ptx: {v.name_hint or 'value'} is not a scalar", None)
        return x

    def frag(self, v: SSAValue) -> Frag:
        x = self.vals.get(v)
        if not isinstance(x, Frag):
            raise CompileError("convert-to-ptx: expected a register tile", _owner(v))
        return x

    def vector_layout(
        self, v: SSAValue, op: Operation
    ) -> tuple[TileLayout, int] | tuple[BlockedLayout, None]:
        part = self.part
        if part is None or part.vectors is None:
            raise CompileError(
                f"convert-to-ptx: tile values are only supported in consumer partitions "
                f"({op.name})",
                op,
            )
        return part.vectors.of(v, op)

    def layout_for(self, t: TensorType, op: Operation) -> TileLayout:
        part = self.part
        if part is None or part.role != "consumer":
            raise CompileError(
                f"convert-to-ptx: tile values are only supported in consumer partitions "
                f"({op.name})",
                op,
            )
        shape = t.get_shape()
        if len(shape) != 2:
            raise CompileError(
                f"convert-to-ptx: {op.name} on a rank-{len(shape)} tile in registers is not "
                "supported yet",
                op,
            )
        if part.vectors is not None:  # the partition's choice (`TileLayouts`)
            return part.vectors.tiles.of(t, op)
        try:
            return AccLayout(shape[0], shape[1], part.warp_groups)
        except ValueError as e:
            raise CompileError(f"convert-to-ptx: {e}", op) from None

    # -- kernel -----------------------------------------------------------------------------

    def run(self) -> ptx.ModuleOp:
        body = self.kernel.body.block
        parts = [p for p in body.ops if isinstance(p, aref.PartitionOp)]
        if not parts:
            raise CompileError(
                "convert-to-ptx: the kernel has no warp-group partitions; run "
                "warp-specialize and lower-aref first",
                self.kernel,
            )
        total_wgs = sum(p.warp_groups.data for p in parts)
        threads = HOPPER.warp_group_size * total_wgs
        ctas = schedule.of(self.kernel).ctas_per_sm
        entry_cap = HOPPER.register_cap(total_wgs, ctas)
        for op in body.ops:
            if isinstance(op, aref.PartitionOp | tile.ReturnOp):
                continue
            self.lower_op(op)
        wg = self.index(layouts.WARP_GROUP)
        first = 0
        for p in parts:
            nxt = self.label("part")
            end = first + p.warp_groups.data
            # tid / 128 is the same in every thread of a warp: uniform branches
            ge = self.r(ptx.SetpOp("ge", "u32", wg, self.imm(end, "u32")))
            self.emit(ptx.BraOp(nxt, ge, uni=True))
            if first > 0:
                lt = self.r(ptx.SetpOp("lt", "u32", wg, self.imm(first, "u32")))
                self.emit(ptx.BraOp(nxt, lt, uni=True))
            self.lower_partition(p, first, entry_cap)
            self.emit(ptx.LabelOp(nxt))
            first = end
        self.emit(ptx.ExitOp())

        plan = schedule.of(self.kernel)
        smem_bytes = plan.smem_bytes or 0
        if self.scratch_bytes:
            smem_bytes = self.scratch_offset() + self.scratch_bytes
        if smem_bytes > HOPPER.smem_per_cta(ctas):
            # the planned rings and staging, then the reductions' scratch after them
            what = (
                f" ({self.scratch_bytes} of them the reductions' scratch)"
                if self.scratch_bytes
                else ""
            )
            where = f"{ctas} CTAs a SM ({HOPPER.smem_per_cta(ctas)} bytes each)"
            if ctas == 1:
                where = f"a CTA ({HOPPER.smem_per_cta(ctas)} bytes)"
            raise CompileError(
                f"convert-to-ptx: the CTA's {smem_bytes} bytes of shared memory{what} do not "
                f"fit {where}; use fewer ctas-per-sm, fewer stages or smaller tiles",
                self.kernel,
            )
        persistent = plan.persistent
        grid = schedule.launch_grid(self.kernel)
        launch = self.params.launch(
            threads, smem_bytes, grid, persistent, plan.cluster, plan.ctas_per_sm
        )
        table = self.kernel.attributes.get(hopper.TRACE_ATTR)
        if table is not None:
            launch = DictionaryAttr({**launch.data, "trace": table})
        entry = ptx.EntryOp(
            self.kernel.kernel_name,
            self.params.decls(),
            threads,
            launch,
            Region(self.block),
            minnctapersm=ctas,
        )
        return ptx.ModuleOp(Region(Block([entry])), version=self.ptx_version)

    def require_ptx(self, version: str) -> None:
        """The module needs PTX ISA `version` at least (an instruction added then)."""
        key = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
        self.ptx_version = max(self.ptx_version, version, key=key)

    def lower_partition(self, p: aref.PartitionOp, first_wg: int, entry_cap: int) -> None:
        self.part = _Partition(p.role.data, first_wg, p.warp_groups.data)
        if self.part.role == "consumer":
            self.part.vectors = VectorLayouts(p, p.warp_groups.data, self.kernel)
        with self.scope():
            self._lower_partition_body(p, entry_cap)
        self.part = None

    def _lower_partition_body(self, p: aref.PartitionOp, entry_cap: int) -> None:
        assert self.part is not None
        regs = p.regs.data
        if regs:
            self.emit(ptx.SetmaxnregOp("dec" if regs < entry_cap else "inc", regs))
        table = self.kernel.attributes.get(hopper.TRACE_ATTR)
        if table is not None:
            self.part.trace = _TRACE_SETUP[0](self, from_attr(table))
        if self.part.role == "producer":
            # One thread issues the producer's TMA copies and barrier operations; the
            # cluster barrier that ends a cluster kernel's partition is for all threads.
            ops = list(p.body.block.ops)
            n = len(ops)
            while n and isinstance(ops[n - 1], hopper.ClusterSyncOp):
                n -= 1
            done = self.label("producer_done")
            self.emit(ptx.BraOp(done, wg_leader(self), negate=True))
            for op in ops[:n]:
                self.lower_op(op)
            self.emit(ptx.LabelOp(done))
            for op in ops[n:]:
                self.lower_op(op)
        else:
            self.lower_block(p.body.block)
            if any(isinstance(o, hopper.TmaStoreOp) for o in p.walk()):
                # The CTA's shared memory must outlive the reads of its last bulk stores.
                self.guarded(wg_leader(self), lambda: self.emit(ptx.CpAsyncBulkWaitReadOp(0)))
        if self.part.trace is not None:
            self.part.trace.finish(self)  # type: ignore[attr-defined]
        self.emit(ptx.ExitOp())

    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise CompileError(f"convert-to-ptx: '{op.name}' is not supported yet", op)
        handler(self, op)

    # -- hopper resources -------------------------------------------------------------------

    def ring_slot_addr(self, ring: Ring, slot: SSAValue) -> SSAValue:
        base = self.add_imm(self.smem_base(), ring.offset, "u32")
        size = ring.type.tile_type.nbytes
        return self.r(ptx.FmaOp("s32", slot, self.imm(size), base))

    def scratch_offset(self) -> int:
        """Where the scratch region starts: after the planned shared memory, 16-byte
        aligned."""
        return scratch_region(schedule.of(self.kernel).smem_bytes or 0, 0).offset

    def scratch(self, nbytes: int, op: Operation) -> SSAValue:
        """The shared address of `nbytes` of scratch (a reduction's per-warp partials):
        every user shares the one region, which the launch adds to the dynamic shared
        memory; its users keep their reads and writes apart with barriers of the consumer
        partition, so a kernel with several consumer partitions, which would run their
        reductions at once, is refused at `op`."""
        consumers = [
            p for p in self.kernel.walk()
            if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
        ]  # fmt: skip
        if len(consumers) != 1:
            raise CompileError(
                "convert-to-ptx: a reduction across warps in a kernel with several consumer "
                "partitions is not supported yet (they would share its shared scratch)",
                op,
            )
        self.scratch_bytes = max(self.scratch_bytes, nbytes)
        return self.cached(
            "scratch", lambda: self.add_imm(self.smem_base(), self.scratch_offset(), "u32")
        )

    def exchange(self, threads: int, writer: SSAValue, write: Callable[[], None]) -> None:
        """The writes of a reduction's partials to the scratch (`write`, by the threads
        where `writer` holds), between two barriers of the consumer partition's `threads`:
        after the first, the scratch's earlier readers are done; after the second, every
        thread may read the partials."""
        bar = self.barriers.get("consumer partition", preferred=HOPPER.named_barriers - 1)
        self.emit(ptx.BarSyncOp(bar, threads))
        self.guarded(writer, write)
        self.emit(ptx.BarSyncOp(bar, threads))

    def bar_addr(self, bars: Bars, slot: SSAValue) -> SSAValue:
        base = self.add_imm(self.smem_base(), bars.offset, "u32")
        return self.r(ptx.FmaOp("s32", slot, self.imm(8), base))

    def materialize(self, f: Frag) -> Frag:
        """Distinct registers for every element (for values written in place)."""
        seen: set[SSAValue] = set()
        regs: list[SSAValue] = []
        for x in f.regs:
            if (
                x in seen
                or not isinstance(x.owner, ptx.PtxInstruction)
                or isinstance(x.owner, ptx.MovImmOp)
            ):
                x = self.r(ptx.MovOp(mov_type(f.dtype), x))
            seen.add(x)
            regs.append(x)
        return f.like(regs, f.dtype)

    def thread_coords(self, layout: TileLayout) -> tuple[SSAValue, SSAValue]:
        """(row, col) of register 0 of this thread within the tile."""
        part = self.part
        assert part is not None

        row = self.cached(("row0", layout), lambda: self.index(layout.thread_row(part.first_wg)))
        col = self.cached(("col0", layout), lambda: self.index(layout.thread_col(part.first_wg)))
        return row, col

    def slice_alignment(self, layout: TileLayout, dim: int) -> int:
        """The largest power of two (at most 16) dividing this partition's first row (`dim`
        0) or column (1) of `layout` in every thread: the expression of `slice_coords`
        evaluated for every thread index of a CTA."""
        part = self.part
        assert part is not None
        expr = layout.thread_row(part.first_wg) if dim == 0 else layout.thread_col(part.first_wg)
        return expr.alignment()

    def slice_coords(self, layout: TileLayout, dim: int) -> tuple[SSAValue, tuple[int, ...]]:
        """This thread's first row (`dim` 0) or column (1) of its slice of `layout`, and
        each of the slice's registers' offsets from it."""
        row, col = self.thread_coords(layout)
        if dim == 1:
            return col, tuple(layout.col_offsets())
        return row, tuple(layout.row_offsets())


def _owner(v: SSAValue) -> Operation | None:
    return v.owner if isinstance(v.owner, Operation) else None


def mov_type(dtype: str) -> str:
    return {"f32": "f32", "bf16": "b16", "f16": "b16", "pred": "pred"}.get(dtype, "b32")


# --- handler registry ------------------------------------------------------------------------

_HANDLERS: dict[type[Operation], Callable[[KernelLowering, Operation], None]] = {}


#: The set-up of a traced partition's registers (`lowering.trace.setup`, registered by
#: that module with `trace_setup`), run right after the partition's `setmaxnreg`.
_TRACE_SETUP: list[Callable[[KernelLowering, dict], object]] = []


def trace_setup(fn):
    _TRACE_SETUP[:] = [fn]
    return fn


def handles(*types: type[Operation]):
    def deco(fn):
        for t in types:
            _HANDLERS[t] = fn
        return fn

    return deco


# --- helpers the handler modules share --------------------------------------------------------


def reg_kind(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, ptx.RegType)
    return t.kind.data


#: The f32 instruction of each `tile.reduce` kind.
REDUCE_OPS = {"max": ptx.MaxOp, "min": ptx.MinOp, "sum": ptx.AddOp}


def combiner(k: KernelLowering, kind: str) -> Callable[[SSAValue, SSAValue], SSAValue]:
    """Two f32 registers combined by the instruction of reduction `kind`."""
    cls = REDUCE_OPS[kind]
    return lambda a, b: k.r(cls("f32", a, b))


def tree(regs: list[SSAValue], combine: Callable[[SSAValue, SSAValue], SSAValue]) -> SSAValue:
    """A balanced tree of `combine`: log2(n) dependent steps instead of n - 1 (a serial
    chain of fixed-latency ops is what the warps of a softmax stall on)."""
    while len(regs) > 1:
        pairs = [combine(a, b) for a, b in zip(regs[::2], regs[1::2], strict=False)]
        regs = pairs + ([regs[-1]] if len(regs) % 2 else [])
    return regs[0]


def map1(k: KernelLowering, f: Frag, make: Callable[[SSAValue], Operation]) -> list[SSAValue]:
    """One instruction per distinct register of `f` (repeated registers share it)."""
    memo: dict[SSAValue, SSAValue] = {}
    for x in f.regs:
        if x not in memo:
            memo[x] = k.r(make(x))
    return [memo[x] for x in f.regs]


def map2(
    k: KernelLowering, a: Frag, b: Frag, make: Callable[[SSAValue, SSAValue], Operation]
) -> list[SSAValue]:
    memo: dict[tuple[SSAValue, SSAValue], SSAValue] = {}
    for x, y in zip(a.regs, b.regs, strict=True):
        if (x, y) not in memo:
            memo[(x, y)] = k.r(make(x, y))
    return [memo[(x, y)] for x, y in zip(a.regs, b.regs, strict=True)]


def wg_local(k: KernelLowering) -> SSAValue:
    """This thread's warp group index within its partition."""
    part = k.part
    assert part is not None
    return k.cached("wg_local", lambda: k.index(layouts.warp_group_in_partition(part.first_wg)))


def wg_leader(k: KernelLowering) -> SSAValue:
    """Whether this thread is its warp group's first (the producer's one thread; the
    consumer thread that issues a warp group's bulk stores)."""
    return k.cached(
        "wg_leader",
        lambda: k.r(ptx.SetpOp("eq", "u32", k.index(layouts.THREAD_IN_GROUP), k.imm(0, "u32"))),
    )


def leading_base(
    k: KernelLowering, dest: SSAValue, indices: Sequence[SSAValue], count: int, nbytes: int
) -> SSAValue:
    """The address of the tensor's element at the first `count` indices (dimensions
    outside the tile, one element each) and 0 along the others."""
    base = k.r(ptx.LdParamOp("u64", k.params.pointer(dest)))
    for d in range(count):
        stride = k.r(ptx.LdParamOp("s64", k.params.stride(dest, d)))
        idx = k.r(ptx.CvtOp("s64", "s32", k.scalar(indices[d])))
        off = k.r(ptx.MulOp("s64", idx, stride, mode="lo"))
        scaled = k.r(ptx.MulOp("s64", off, k.imm(nbytes, "s64"), mode="lo"))
        base = k.r(ptx.AddOp("s64", base, scaled))
    return base


def vector_splat(k: KernelLowering, v: SSAValue, op: Operation, reg: SSAValue, dtype: str) -> Frag:
    """The 1-d tile `v` with every element `reg`, in its layout (a slice of a 2-d tile's,
    or a standalone vector's `BlockedLayout`)."""
    layout, dim = k.vector_layout(v, op)
    if isinstance(layout, BlockedLayout):
        return Frag(layout, [reg] * layout.num_regs, dtype)
    n = len(layout.row_offsets() if dim == 0 else layout.col_offsets())
    return Frag(layout, [reg] * n, dtype, dim)
