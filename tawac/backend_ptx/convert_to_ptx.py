"""`convert-to-ptx`: the lowered tile kernel to the `ptx` dialect (one op per instruction).

Input: a `tile.kernel` after `lower-aref` (hopper resources at the top, then one
`aref.partition` per role holding scalar `arith`, `scf.for`/`scf.if`, `hopper` ops and the
epilogue's tile ops).  Output: a `ptx.module` with one `ptx.entry`, replacing the kernel.

Values become registers: index and i32 scalars one `b32` (s32 arithmetic), i1 a `pred`,
f32 an `f32`; a tile in a consumer partition becomes a `Frag`, its register list in the
layout chosen by `tawac.backend_ptx.layouts`.  Structured control flow becomes labels and
branches; loop-carried registers are written with `ptx.assign`.

Kernel structure: thread 0 initialises the mbarriers, `bar.sync 0`, then each warp group
branches to its partition (warp group 0 the producer, the next ones the consumers), sets
its register budget with `setmaxnreg`, runs its code and exits.  The producer's code runs
on one thread; the consumers' on all their threads.

The launch ABI (kernel parameters, block, grid, shared memory) is recorded on the entry.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce

from tawac import schedule
from tawac.backend_ptx import abi, int_arith
from tawac.backend_ptx.layouts import AccLayout
from tawac.backend_ptx.vector_layouts import VectorLayouts
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, ptx, tile
from tawac.target import HOPPER, MmaAtom, NamedBarriers

_CMPI = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge", 6: "lo", 7: "ls", 8: "hi", 9: "hs"}
_CMPI_TYPE = {0: "s32", 1: "s32", 2: "s32", 3: "s32", 4: "s32", 5: "s32"}


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
    along dimension `dim` (`AccLayout.col_offsets()` / `row_offsets()` registers)."""

    layout: AccLayout
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


class KernelLowering:
    def __init__(self, kernel: tile.KernelOp):
        self.kernel = kernel
        self.block = Block()
        self.vals: dict[SSAValue, object] = {}
        self.params = abi.ParamTable(kernel)
        self.barriers = NamedBarriers()
        self.labels = 0
        self.part: _Partition | None = None
        self.scopes: list[dict[object, SSAValue]] = [{}]

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
            if key in scope:
                return scope[key]
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

    def imm(self, value: int, ty: str = "s32") -> SSAValue:
        return self.cached(("imm", ty, value), lambda: self.r(ptx.MovImmOp(ty, value)))

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
        return self.cached("lane", lambda: self.r(ptx.AndOp("b32", self.tid(), self.imm(31))))

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

    def vector_layout(self, v: SSAValue, op: Operation) -> tuple[AccLayout, int]:
        part = self.part
        if part is None or part.vectors is None:
            raise CompileError(
                f"convert-to-ptx: tile values are only supported in consumer partitions "
                f"({op.name})",
                op,
            )
        return part.vectors.of(v, op)

    def layout_for(self, t: TensorType, op: Operation) -> AccLayout:
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
        entry_cap = HOPPER.register_cap(total_wgs)
        for op in body.ops:
            if isinstance(op, aref.PartitionOp | tile.ReturnOp):
                continue
            self.lower_op(op)
        wg = self.r(ptx.ShrOp("u32", self.tid(), self.imm(7)))
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
        smem_bytes = plan.get("smem_bytes") or 0
        persistent = plan.persistent
        launch = self.params.launch(threads, smem_bytes, abi.infer_grid(self.kernel), persistent)
        entry = ptx.EntryOp(
            self.kernel.kernel_name, self.params.decls(), threads, launch, Region(self.block)
        )
        return ptx.ModuleOp(Region(Block([entry])))

    def lower_partition(self, p: aref.PartitionOp, first_wg: int, entry_cap: int) -> None:
        self.part = _Partition(p.role.data, first_wg, p.warp_groups.data)
        if self.part.role == "consumer":
            self.part.vectors = VectorLayouts(p, p.warp_groups.data)
        with self.scope():
            self._lower_partition_body(p, entry_cap)
        self.part = None

    def _lower_partition_body(self, p: aref.PartitionOp, entry_cap: int) -> None:
        assert self.part is not None
        regs = p.regs.data
        if regs:
            self.emit(ptx.SetmaxnregOp("dec" if regs < entry_cap else "inc", regs))
        if self.part.role == "producer":
            # One thread issues the producer's TMA copies and barrier operations.
            done = self.label("producer_done")
            self.emit(ptx.BraOp(done, _wg_leader(self), negate=True))
            self.lower_block(p.body.block)
            self.emit(ptx.LabelOp(done))
        else:
            self.lower_block(p.body.block)
            if any(isinstance(o, hopper.TmaStoreOp) for o in p.walk()):
                # The CTA's shared memory must outlive the reads of its last bulk stores.
                self.guarded(_wg_leader(self), lambda: self.emit(ptx.CpAsyncBulkWaitReadOp(0)))
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
                x = self.r(ptx.MovOp(_mov_type(f.dtype), x))
            seen.add(x)
            regs.append(x)
        return f.like(regs, f.dtype)

    def thread_coords(self, layout: AccLayout) -> tuple[SSAValue, SSAValue]:
        """(row, col) of register 0 of this thread within the tile."""
        part = self.part
        assert part is not None

        def make_row() -> SSAValue:
            tid = self.tid()
            wg = self.r(ptx.ShrOp("u32", tid, self.imm(7)))
            wg = self.r(ptx.SubOp("s32", wg, self.imm(part.first_wg)))
            warp = self.r(ptx.AndOp("b32", self.r(ptx.ShrOp("u32", tid, self.imm(5))), self.imm(3)))
            quad = self.r(ptx.ShrOp("u32", self.lane(), self.imm(2)))
            row = self.r(ptx.FmaOp("s32", warp, self.imm(16), quad))
            return self.r(ptx.FmaOp("s32", wg, self.imm(layout.rows_per_warp_group), row))

        def make_col() -> SSAValue:
            return self.r(
                ptx.ShlOp("b32", self.r(ptx.AndOp("b32", self.lane(), self.imm(3))), self.imm(1))
            )

        row = self.cached(("row0", layout), make_row)
        col = self.cached(("col0", layout), make_col)
        return row, col


def _owner(v: SSAValue) -> Operation | None:
    return v.owner if isinstance(v.owner, Operation) else None


def _mov_type(dtype: str) -> str:
    return {"f32": "f32", "bf16": "b16", "f16": "b16", "pred": "pred"}.get(dtype, "b32")


# --- handlers --------------------------------------------------------------------------------

_HANDLERS: dict[type[Operation], Callable[[KernelLowering, Operation], None]] = {}


def handles(*types: type[Operation]):
    def deco(fn):
        for t in types:
            _HANDLERS[t] = fn
        return fn

    return deco


@handles(arith.ConstantOp)
def _constant(k: KernelLowering, op: arith.ConstantOp) -> None:
    v = op.value
    t = op.result.type
    if isinstance(t, IndexType | IntegerType) and isinstance(v, IntegerAttr):
        if isinstance(t, IntegerType) and t.width.data == 1:
            k.vals[op.result] = k.r(ptx.SetpOp("ne", "s32", k.imm(v.value.data), k.imm(0)))
            return
        k.vals[op.result] = k.imm(v.value.data)
        return
    if isinstance(t, Float32Type) and isinstance(v, FloatAttr):
        k.vals[op.result] = k.fimm(v.value.data)
        return
    if isinstance(t, TensorType) and isinstance(v, DenseIntOrFPElementsAttr):
        vals = v.get_values()
        if len(set(vals)) == 1 and isinstance(t.element_type, Float32Type):
            reg = k.fimm(float(vals[0]))
            if t.get_num_dims() == 1:
                layout, dim = k.vector_layout(op.result, op)
                n = len(layout.row_offsets() if dim == 0 else layout.col_offsets())
                k.vals[op.result] = Frag(layout, [reg] * n, "f32", dim)
                return
            layout = k.layout_for(t, op)
            k.vals[op.result] = Frag(layout, [reg] * layout.num_regs, "f32")
            return
    raise CompileError(f"convert-to-ptx: constant of type {t} is not supported yet", op)


_INT_BINARY = {
    arith.AddiOp: (ptx.AddOp, "s32"),
    arith.SubiOp: (ptx.SubOp, "s32"),
    arith.DivUIOp: (ptx.DivOp, "u32"),
    arith.DivSIOp: (ptx.DivOp, "s32"),
    arith.RemUIOp: (ptx.RemOp, "u32"),
    arith.RemSIOp: (ptx.RemOp, "s32"),
    arith.MinSIOp: (ptx.MinOp, "s32"),
    arith.MaxSIOp: (ptx.MaxOp, "s32"),
    arith.MinUIOp: (ptx.MinOp, "u32"),
    arith.MaxUIOp: (ptx.MaxOp, "u32"),
    arith.AndIOp: (ptx.AndOp, "b32"),
    arith.OrIOp: (ptx.OrOp, "b32"),
    arith.XOrIOp: (ptx.XorOp, "b32"),
    arith.ShLIOp: (ptx.ShlOp, "b32"),
    arith.ShRUIOp: (ptx.ShrOp, "u32"),
    arith.ShRSIOp: (ptx.ShrOp, "s32"),
}


@handles(*_INT_BINARY)
def _int_binary(k: KernelLowering, op: Operation) -> None:
    cls, ty = _INT_BINARY[type(op)]  # type: ignore[index]
    a, b = (k.scalar(v) for v in op.operands)
    if ty == "b32" and all(_kind(x) == "pred" for x in (a, b)):
        k.vals[op.results[0]] = k.r(cls("pred", a, b))
        return
    k.vals[op.results[0]] = int_arith.binary(k, cls, ty, a, b)


def _kind(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, ptx.RegType)
    return t.kind.data


@handles(arith.MuliOp)
def _muli(k: KernelLowering, op: arith.MuliOp) -> None:
    a, b = k.scalar(op.lhs), k.scalar(op.rhs)
    k.vals[op.result] = int_arith.binary(k, ptx.MulOp, "s32", a, b)


@handles(arith.CeilDivUIOp, arith.CeilDivSIOp)
def _ceildiv(k: KernelLowering, op: Operation) -> None:
    a, b = (k.scalar(v) for v in op.operands)
    ty = "u32" if isinstance(op, arith.CeilDivUIOp) else "s32"
    t = int_arith.binary(k, ptx.SubOp, "s32", int_arith.binary(k, ptx.AddOp, "s32", a, b), k.imm(1))
    k.vals[op.results[0]] = int_arith.binary(k, ptx.DivOp, ty, t, b)


@handles(arith.CmpiOp)
def _cmpi(k: KernelLowering, op: arith.CmpiOp) -> None:
    pred = op.predicate.value.data
    ty = _CMPI_TYPE.get(pred, "u32")
    k.vals[op.result] = k.r(ptx.SetpOp(_CMPI[pred], ty, k.scalar(op.lhs), k.scalar(op.rhs)))


@handles(arith.SelectOp)
def _select(k: KernelLowering, op: arith.SelectOp) -> None:
    c = k.vals.get(op.cond)
    t, f = k.vals.get(op.lhs), k.vals.get(op.rhs)
    if isinstance(c, SSAValue) and isinstance(t, SSAValue) and isinstance(f, SSAValue):
        ty = "f32" if _kind(t) == "f32" else "s32"
        k.vals[op.result] = k.r(ptx.SelpOp(ty, t, f, c))
        return
    if isinstance(c, SSAValue) and isinstance(t, Frag) and isinstance(f, Frag):
        c = t.like([c] * len(t.regs), "pred")  # a uniform condition
    if isinstance(c, Frag) and isinstance(t, Frag) and isinstance(f, Frag):
        k.vals[op.result] = _select_frags(k, op, c, t, f)
        return
    raise CompileError("convert-to-ptx: select of a tile needs a tile condition", op)


def _select_frags(k: KernelLowering, op: Operation, c: Frag, t: Frag, f: Frag) -> Frag:
    """One `selp` per distinct (condition, true, false) register triple."""
    if not (c.same_layout(t) and t.same_layout(f)) or t.dtype != f.dtype:
        raise CompileError(f"convert-to-ptx: {op.name} operands differ in layout", op)
    memo: dict[tuple[SSAValue, SSAValue, SSAValue], SSAValue] = {}
    regs = []
    for p, x, y in zip(c.regs, t.regs, f.regs, strict=True):
        if (p, x, y) not in memo:
            memo[(p, x, y)] = k.r(ptx.SelpOp(_sel_type(t.dtype), x, y, p))
        regs.append(memo[(p, x, y)])
    return t.like(regs, t.dtype)


def _sel_type(dtype: str) -> str:
    return {"f32": "f32", "bf16": "b16", "f16": "b16"}.get(dtype, "b32")


@handles(arith.IndexCastOp)
def _index_cast(k: KernelLowering, op: arith.IndexCastOp) -> None:
    k.vals[op.result] = k.scalar(op.input)


_FLOAT_BINARY = {
    arith.AddfOp: ptx.AddOp,
    arith.SubfOp: ptx.SubOp,
    arith.MulfOp: ptx.MulOp,
    arith.DivfOp: ptx.DivOp,
    arith.MaximumfOp: ptx.MaxOp,
    arith.MinimumfOp: ptx.MinOp,
}


@handles(*_FLOAT_BINARY)
def _float_binary(k: KernelLowering, op: Operation) -> None:
    cls = _FLOAT_BINARY[type(op)]  # type: ignore[index]
    # add/sub/mul without a rounding modifier let ptxas contract a multiply and an add
    # into one fma (as CUDA does by default); div.f32 needs one.
    mode = "rn" if cls is ptx.DivOp else None
    a, b = (k.vals.get(v) for v in op.operands)
    if isinstance(op, arith.DivfOp) and _reciprocal_ok(op):
        _div_by_reciprocal(k, op, a, b)
        return
    if isinstance(a, SSAValue) and isinstance(b, SSAValue):
        k.vals[op.results[0]] = k.r(cls("f32", a, b, mode=mode))
        return
    if isinstance(a, Frag) and isinstance(b, Frag):
        if not a.same_layout(b) or a.dtype != "f32" or b.dtype != "f32":
            raise CompileError(
                "convert-to-ptx: elementwise math needs f32 operands in the same layout", op
            )
        k.vals[op.results[0]] = a.like(
            _map2(k, a, b, lambda x, y: cls("f32", x, y, mode=mode)), "f32"
        )
        return
    raise CompileError(f"convert-to-ptx: operands of {op.name} must both be tiles or scalars", op)


def _reciprocal_ok(op: arith.DivfOp) -> bool:
    flags = {f.value for f in op.fastmath.data}
    return "arcp" in flags or "afn" in flags


def _div_by_reciprocal(k: KernelLowering, op: arith.DivfOp, a: object, b: object) -> None:
    """`x / y` as `x * (1 / y)` where the fastmath flags allow it: `arcp` (the reciprocal
    rounded, `rcp.rn`) or `afn` (`rcp.approx`).  One reciprocal per distinct register of
    the divisor: dividing a tile by a broadcast row vector (attention's O / l) takes one
    per row instead of one IEEE division (a ~20-instruction subroutine) per element."""
    mode = "approx.ftz" if "afn" in {f.value for f in op.fastmath.data} else "rn"
    if isinstance(a, SSAValue) and isinstance(b, SSAValue):
        k.vals[op.result] = k.r(ptx.MulOp("f32", a, k.r(ptx.RcpOp(b, mode))))
        return
    if not (isinstance(a, Frag) and isinstance(b, Frag) and a.same_layout(b)):
        raise CompileError(
            "convert-to-ptx: elementwise math needs f32 operands in the same layout", op
        )
    if a.dtype != "f32" or b.dtype != "f32":
        raise CompileError("convert-to-ptx: arith.divf needs f32 operands", op)
    inv = b.like(_map1(k, b, lambda y: ptx.RcpOp(y, mode)), "f32")
    k.vals[op.result] = a.like(_map2(k, a, inv, lambda x, y: ptx.MulOp("f32", x, y)), "f32")


def _map1(k: KernelLowering, f: Frag, make: Callable[[SSAValue], Operation]) -> list[SSAValue]:
    """One instruction per distinct register of `f` (repeated registers share it)."""
    memo: dict[SSAValue, SSAValue] = {}
    for x in f.regs:
        if x not in memo:
            memo[x] = k.r(make(x))
    return [memo[x] for x in f.regs]


def _map2(
    k: KernelLowering, a: Frag, b: Frag, make: Callable[[SSAValue, SSAValue], Operation]
) -> list[SSAValue]:
    memo: dict[tuple[SSAValue, SSAValue], SSAValue] = {}
    for x, y in zip(a.regs, b.regs, strict=True):
        if (x, y) not in memo:
            memo[(x, y)] = k.r(make(x, y))
    return [memo[(x, y)] for x, y in zip(a.regs, b.regs, strict=True)]


_LOG2E = 1.4426950408889634


def _f32_unary(k: KernelLowering, op: Operation, emit: Callable[[SSAValue], SSAValue]) -> None:
    src = k.vals.get(op.operands[0])
    if isinstance(src, SSAValue):
        k.vals[op.results[0]] = emit(src)
        return
    if not isinstance(src, Frag) or src.dtype != "f32":
        raise CompileError(f"convert-to-ptx: {op.name} needs an f32 tile or scalar", op)
    memo: dict[SSAValue, SSAValue] = {}
    regs = []
    for x in src.regs:
        if x not in memo:
            memo[x] = emit(x)
        regs.append(memo[x])
    k.vals[op.results[0]] = src.like(regs, "f32")


@handles(arith.NegfOp)
def _negf(k: KernelLowering, op: arith.NegfOp) -> None:
    _f32_unary(k, op, lambda x: k.r(ptx.NegOp("f32", x)))


@handles(math.Exp2Op)
def _exp2(k: KernelLowering, op: math.Exp2Op) -> None:
    _f32_unary(k, op, lambda x: k.r(ptx.Ex2Op(x)))


@handles(math.ExpOp)
def _exp(k: KernelLowering, op: math.ExpOp) -> None:
    """exp(x) = 2^(x * log2 e) (`ex2.approx.ftz.f32`, relative error ~2^-22)."""
    _f32_unary(k, op, lambda x: k.r(ptx.Ex2Op(k.r(ptx.MulOp("f32", x, k.fimm(_LOG2E), mode="rn")))))


_CMPF = {
    1: "eq",
    2: "gt",
    3: "ge",
    4: "lt",
    5: "le",
    6: "ne",
    8: "equ",
    9: "gtu",
    10: "geu",
    11: "ltu",
    12: "leu",
    13: "neu",
}


@handles(arith.CmpfOp)
def _cmpf(k: KernelLowering, op: arith.CmpfOp) -> None:
    cmp = _CMPF.get(op.predicate.value.data)
    if cmp is None:
        raise CompileError("convert-to-ptx: this arith.cmpf predicate is not supported", op)
    a, b = k.vals.get(op.lhs), k.vals.get(op.rhs)
    if isinstance(a, SSAValue) and isinstance(b, SSAValue):
        k.vals[op.result] = k.r(ptx.SetpOp(cmp, "f32", a, b))
        return
    if isinstance(a, Frag) and isinstance(b, Frag) and a.same_layout(b):
        k.vals[op.result] = a.like(
            _map2(k, a, b, lambda x, y: ptx.SetpOp(cmp, "f32", x, y)), "pred"
        )
        return
    raise CompileError("convert-to-ptx: arith.cmpf needs two f32 tiles or scalars", op)


@handles(arith.TruncFOp, arith.ExtFOp)
def _float_cast(k: KernelLowering, op: Operation) -> None:
    src = k.frag(op.operands[0])
    rt = op.results[0].type
    assert isinstance(rt, TensorType)
    dst = elem_ptx_type(rt.element_type)
    rnd = "rn" if isinstance(op, arith.TruncFOp) else None
    regs = _map1(k, src, lambda x: ptx.CvtOp(dst, src.dtype, x, rnd=rnd))
    k.vals[op.results[0]] = src.like(regs, dst)


@handles(tile.ProgramIdOp)
def _program_id(k: KernelLowering, op: tile.ProgramIdOp) -> None:
    axis = "xyz"[op.axis.data]
    k.vals[op.result] = k.cached(("ctaid", axis), lambda: k.r(ptx.SpecialRegOp(f"ctaid.{axis}")))


@handles(hopper.CtaIdOp)
def _cta_id(k: KernelLowering, op: hopper.CtaIdOp) -> None:
    k.vals[op.result] = k.cached(("ctaid", "x"), lambda: k.r(ptx.SpecialRegOp("ctaid.x")))


@handles(hopper.NumCtasOp)
def _num_ctas(k: KernelLowering, op: hopper.NumCtasOp) -> None:
    k.vals[op.result] = k.cached(("nctaid", "x"), lambda: k.r(ptx.SpecialRegOp("nctaid.x")))


@handles(tile.DimOp)
def _dim(k: KernelLowering, op: tile.DimOp) -> None:
    name = k.params.dim(op.source, op.dim.data)
    k.vals[op.result] = k.cached(("param", name), lambda: k.r(ptx.LdParamOp("s32", name)))


@handles(tile.SplatOp)
def _splat(k: KernelLowering, op: tile.SplatOp) -> None:
    t = op.result.type
    assert isinstance(t, TensorType)
    dtype = "f32" if isinstance(op.value.type, Float32Type) else "s32"
    if t.get_num_dims() == 1:
        layout, dim = k.vector_layout(op.result, op)
        n = len(layout.row_offsets() if dim == 0 else layout.col_offsets())
        k.vals[op.result] = Frag(layout, [k.scalar(op.value)] * n, dtype, dim)
        return
    layout = k.layout_for(t, op)
    k.vals[op.result] = Frag(layout, [k.scalar(op.value)] * layout.num_regs, dtype)


@handles(tile.IotaOp)
def _iota(k: KernelLowering, op: tile.IotaOp) -> None:
    """offset + coordinate: the thread's coordinate (from the layout) plus each
    register's constant offset; registers with the same offset share one value."""
    t = op.result.type
    assert isinstance(t, TensorType)
    layout = k.layout_for(t, op)
    row0, col0 = k.thread_coords(layout)
    dim = op.dim.data
    base = k.add(k.scalar(op.offset), row0 if dim == 0 else col0)
    by_offset: dict[int, SSAValue] = {}
    regs = []
    for i in range(layout.num_regs):
        off = layout.reg_offset(i)[dim]
        if off not in by_offset:
            by_offset[off] = k.add_imm(base, off)
        regs.append(by_offset[off])
    k.vals[op.result] = Frag(layout, regs, "s32")


_TILE_CMPI = {"eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge"}


@handles(tile.CmpiOp)
def _tile_cmpi(k: KernelLowering, op: tile.CmpiOp) -> None:
    a, b = k.frag(op.lhs), k.frag(op.rhs)
    if not a.same_layout(b):
        raise CompileError("convert-to-ptx: tile.cmpi operands differ in layout", op)
    cmp = _TILE_CMPI[op.predicate.data]
    k.vals[op.result] = a.like(_map2(k, a, b, lambda x, y: ptx.SetpOp(cmp, "s32", x, y)), "pred")


@handles(tile.SelectOp)
def _tile_select(k: KernelLowering, op: tile.SelectOp) -> None:
    c, t, f = k.frag(op.cond), k.vals.get(op.true_value), k.vals.get(op.false_value)
    if not isinstance(t, Frag) or not isinstance(f, Frag):
        raise CompileError("convert-to-ptx: tile.select needs tiles", op)
    k.vals[op.result] = _select_frags(k, op, c, t, f)


@handles(tile.ReduceOp)
def _reduce(k: KernelLowering, op: tile.ReduceOp) -> None:
    """Row reductions: combine a thread's registers of each row, then across the quad of
    lanes holding the row (`shfl.sync.bfly` 1, 2).  The result is the row vector in the
    slice layout (dim 0), replicated over the quad, so broadcasting it back is free."""
    src = k.frag(op.source)
    if src.dim is not None or src.dtype != "f32":
        raise CompileError("convert-to-ptx: tile.reduce needs a 2-d f32 tile", op)
    if op.dim.data != 1:
        raise CompileError(
            "convert-to-ptx: reductions along dimension 0 (across warps) are not supported "
            "yet; reduce along dimension 1",
            op,
        )
    layout = src.layout
    combine = ptx.MaxOp if op.kind.data == "max" else ptx.AddOp
    mode = None
    regs = []
    for dr in layout.row_offsets():
        row = [src.regs[i] for i in range(layout.num_regs) if layout.reg_offset(i)[0] == dr]
        # A balanced tree: log2(n) dependent steps instead of n - 1 (a serial chain of
        # fixed-latency ops is what the warps of the softmax stall on).
        while len(row) > 1:
            halves = zip(row[::2], row[1::2], strict=False)
            pairs = [k.r(combine("f32", a, b, mode=mode)) for a, b in halves]
            row = pairs + ([row[-1]] if len(row) % 2 else [])
        acc = row[0]
        for mask in layout.row_reduction_lanes():
            acc = k.r(combine("f32", acc, k.r(ptx.ShflBflyOp(acc, mask)), mode=mode))
        regs.append(acc)
    k.vals[op.result] = Frag(layout, regs, "f32", 0)


@handles(tile.BroadcastOp)
def _broadcast(k: KernelLowering, op: tile.BroadcastOp) -> None:
    t = op.result.type
    assert isinstance(t, TensorType)
    layout = k.layout_for(t, op)
    src = k.vals.get(op.source)
    if not isinstance(src, Frag) or src.dim is None:
        raise CompileError(
            "convert-to-ptx: tile.broadcast needs a vector computed in this partition", op
        )
    if src.dim != op.dim.data or src.layout.slice_key(src.dim) != layout.slice_key(src.dim):
        raise CompileError("convert-to-ptx: tile.broadcast layout mismatch", op)
    regs = [src.regs[layout.slice_index(src.dim, i)] for i in range(layout.num_regs)]
    k.vals[op.result] = Frag(layout, regs, src.dtype)


@handles(tile.LoadOp)
def _load_vector(k: KernelLowering, op: tile.LoadOp) -> None:
    """A 1-d load in a consumer, loaded straight into the slice layout of its broadcast."""
    t = op.result.type
    assert isinstance(t, TensorType)
    if t.get_num_dims() != 1:
        raise CompileError(
            "convert-to-ptx: this tile.load is neither an MMA operand (TMA) nor a vector; "
            "such loads are not supported yet",
            op,
        )
    layout, dim = k.vector_layout(op.result, op)
    row0, col0 = k.thread_coords(layout)
    offsets = layout.col_offsets() if dim == 1 else layout.row_offsets()
    start = k.add(k.scalar(op.indices[0]), col0 if dim == 1 else row0)
    size = k.cached(
        ("param", k.params.dim(op.source, 0)),
        lambda: k.r(ptx.LdParamOp("s32", k.params.dim(op.source, 0))),
    )
    base = k.cached(
        ("param", k.params.pointer(op.source)),
        lambda: k.r(ptx.LdParamOp("u64", k.params.pointer(op.source))),
    )
    ety = elem_ptx_type(t.element_type)
    nbytes = elem_bytes(t.element_type)
    regs = []
    for off in offsets:
        idx = k.add_imm(start, off)
        ok = k.r(ptx.SetpOp("lt", "s32", idx, size))
        addr = k.r(ptx.AddOp("s64", base, k.r(ptx.MulOp("s32", idx, k.imm(nbytes), mode="wide"))))
        val = k.r(ptx.MovImmOp("f32", 0.0)) if ety == "f32" else k.r(ptx.MovImmOp("b16", 0))
        k.guarded(
            ok,
            lambda a=addr, v=val: k.emit(
                ptx.AssignOp(_mov_type(ety), v, k.r(ptx.LdGlobalOp(_mov_type(ety), a)))
            ),
        )
        regs.append(val)
    k.vals[op.result] = Frag(layout, regs, ety, dim)


@handles(tile.StoreOp)
def _store(k: KernelLowering, op: tile.StoreOp) -> None:
    f = k.frag(op.value)
    layout = f.layout
    dest = op.dest
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    if gt.rank != 2:
        raise CompileError("convert-to-ptx: only 2-d tile.store is supported yet", op)
    nbytes = elem_bytes(gt.element_type)
    st_ty = _mov_type(f.dtype)
    base = k.r(ptx.LdParamOp("u64", k.params.pointer(dest)))
    stride = k.r(ptx.LdParamOp("s64", k.params.stride(dest, 0)))
    rows = k.r(ptx.LdParamOp("s32", k.params.dim(dest, 0)))
    cols = k.r(ptx.LdParamOp("s32", k.params.dim(dest, 1)))
    row0, col0 = k.thread_coords(layout)
    row0 = k.add(row0, k.scalar(op.indices[0]))
    col0 = k.add(col0, k.scalar(op.indices[1]))
    row_addr: dict[int, tuple[SSAValue, SSAValue]] = {}
    for dr in layout.row_offsets():
        row = k.add_imm(row0, dr)
        ok = k.r(ptx.SetpOp("lt", "s32", row, rows))
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", row)), stride, mode="lo"))
        off = k.r(ptx.MulOp("s64", off, k.imm(nbytes, "s64"), mode="lo"))
        row_addr[dr] = (ok, k.r(ptx.AddOp("s64", base, off)))
    col_off: dict[int, tuple[SSAValue, SSAValue]] = {}
    for dc in layout.col_offsets():
        col = k.add_imm(col0, dc)
        ok = k.r(ptx.SetpOp("lt", "s32", col, cols))
        col_off[dc] = (ok, k.r(ptx.MulOp("s32", col, k.imm(nbytes), mode="wide")))
    for i, reg in enumerate(f.regs):
        dr, dc = layout.reg_offset(i)
        rok, raddr = row_addr[dr]
        cok, coff = col_off[dc]
        ok = k.r(ptx.AndOp("pred", rok, cok))
        addr = k.r(ptx.AddOp("s64", raddr, coff))
        k.guarded(ok, lambda a=addr, v=reg: k.emit(ptx.StGlobalOp(st_ty, a, v)))


@handles(scf.ForOp)
def _for(k: KernelLowering, op: scf.ForOp) -> None:
    lb, ub, step = k.scalar(op.lb), k.scalar(op.ub), k.scalar(op.step)
    iv = k.r(ptx.MovOp("b32", lb))
    carried: list[object] = []
    for init in op.iter_args:
        x = k.vals.get(init)
        if isinstance(x, Frag) and _packs(x):
            carried.append(_Packed(x, [k.r(ptx.MovOp("b32", r)) for r in _pairs(k, x)]))
        elif isinstance(x, Frag):
            carried.append(k.materialize(x))
        elif isinstance(x, SSAValue):
            carried.append(k.r(ptx.MovOp(_mov_type(_kind(x)), x)))
        else:
            raise CompileError("convert-to-ptx: unsupported loop-carried value", op)
    top, end = k.label("loop"), k.label("loop_end")
    k.emit(ptx.BraOp(end, k.r(ptx.SetpOp("ge", "s32", iv, ub)), uni=True))
    k.emit(ptx.LabelOp(top))
    body = op.body.block
    k.vals[body.args[0]] = iv
    with k.scope():
        for arg, c in zip(body.args[1:], carried, strict=True):
            k.vals[arg] = _unpacked(k, c)
        for inner in body.ops:
            if isinstance(inner, scf.YieldOp):
                for y, c in zip(inner.operands, carried, strict=True):
                    _assign(k, c, k.vals[y])
                continue
            k.lower_op(inner)
        k.emit(ptx.AssignOp("b32", iv, k.add(iv, step)))
    k.emit(ptx.BraOp(top, k.r(ptx.SetpOp("lt", "s32", iv, ub)), uni=True))
    k.emit(ptx.LabelOp(end))
    for res, c in zip(op.results, carried, strict=True):
        k.vals[res] = _unpacked(k, c)


@dataclass
class _Packed:
    """A loop-carried 16-bit tile kept as packed pairs (`regs[i]` holds elements 2i and
    2i+1): ptxas gives every .b16 register a whole 32-bit register, so carrying the
    halves would double the registers of, e.g., attention's P."""

    like: Frag
    regs: list[SSAValue]


def _packs(f: Frag) -> bool:
    return f.dim is None and f.dtype in ("bf16", "f16") and len(f.regs) % 2 == 0


def _pairs(k: KernelLowering, f: Frag) -> list[SSAValue]:
    regs = k.materialize(f).regs
    return [_pack_pair(k, regs[i], regs[i + 1]) for i in range(0, len(regs), 2)]


def _unpacked(k: KernelLowering, c: object) -> object:
    """The carried value as the body sees it: packed pairs split again (the split is
    free where the halves only feed a wgmma A operand, which re-packs them)."""
    if not isinstance(c, _Packed):
        return c
    regs: list[SSAValue] = []
    for r in c.regs:
        u = ptx.UnpackB16Op(r)
        k.emit(u)
        regs += [u.lo, u.hi]
    return c.like.like(regs, c.like.dtype)


def _assign(k: KernelLowering, dst: object, src: object) -> None:
    if isinstance(dst, _Packed) and isinstance(src, Frag):
        for d, s in zip(dst.regs, _pairs(k, src), strict=True):
            if d is not s:
                k.emit(ptx.AssignOp("b32", d, s))
        return
    if isinstance(dst, Frag) and isinstance(src, Frag):
        for d, s in zip(dst.regs, src.regs, strict=True):
            if d is not s:
                k.emit(ptx.AssignOp(_mov_type(dst.dtype), d, s))
        return
    if isinstance(dst, SSAValue) and isinstance(src, SSAValue):
        if dst is not src:
            k.emit(ptx.AssignOp(_mov_type(_kind(dst)), dst, src))
        return
    raise CompileError("convert-to-ptx: mismatched loop-carried values", None)


@handles(scf.IfOp)
def _if(k: KernelLowering, op: scf.IfOp) -> None:
    """Branches; results live in registers both branches write (`ptx.assign`).  A result
    that one branch yields unchanged from before the `if`, with no other use, keeps that
    value's registers: only the other branch writes them (no copy, no extra live tile)."""
    cond = k.scalar(op.cond)
    else_label, end = k.label("else"), k.label("endif")
    holders: list[object] | None = _reused_holders(k, op)
    k.emit(ptx.BraOp(else_label, cond, negate=True, uni=True))
    with k.scope():
        holders = _branch(k, op.true_region.block, holders)
    k.emit(ptx.BraOp(end, uni=True))
    k.emit(ptx.LabelOp(else_label))
    if op.false_region.blocks:
        with k.scope():
            _branch(k, op.false_region.block, holders)
    elif op.results:
        raise CompileError("convert-to-ptx: scf.if with results needs an else branch", op)
    k.emit(ptx.LabelOp(end))
    for res, holder in zip(op.results, holders, strict=True):
        k.vals[res] = holder


def _reused_holders(k: KernelLowering, op: scf.IfOp) -> list[object] | None:
    if not op.results or not op.false_region.blocks:
        return None
    yields = [r.block.last_op for r in (op.true_region, op.false_region)]
    holders: list[object | None] = []
    for i in range(len(op.results)):
        found = None
        for y in yields:
            assert isinstance(y, scf.YieldOp)
            v = y.operands[i]
            x = k.vals.get(v)
            inside = all(op.is_ancestor(u.operation) for u in v.uses)
            if isinstance(x, Frag) and inside and len(set(x.regs)) == len(x.regs):
                found = x
        holders.append(found)
    return holders if all(h is not None for h in holders) else None


def _branch(k: KernelLowering, block: Block, holders: list[object] | None) -> list[object]:
    """Lowers one branch; its yielded values go into `holders` (made on the first)."""
    for inner in block.ops:
        if not isinstance(inner, scf.YieldOp):
            k.lower_op(inner)
            continue
        values = [k.vals[v] for v in inner.operands]
        if holders is None:
            holders = [_fresh_like(k, v) for v in values]
        for h, v in zip(holders, values, strict=True):
            _assign(k, h, v)
    return holders if holders is not None else []


def _fresh_like(k: KernelLowering, v: object) -> object:
    """New registers of the same classes as a value, defined by later assigns."""
    if isinstance(v, Frag):
        kind = _kind(v.regs[0])
        return v.like([k.r(ptx.DeclareRegOp(kind)) for _ in v.regs], v.dtype)
    if isinstance(v, SSAValue):
        return k.r(ptx.DeclareRegOp(_kind(v)))
    raise CompileError("convert-to-ptx: unsupported scf.if result", None)


@handles(hopper.SmemAllocOp)
def _smem_alloc(k: KernelLowering, op: hopper.SmemAllocOp) -> None:
    t = op.result.type
    assert isinstance(t, hopper.SmemRingType)
    k.vals[op.result] = Ring(op.offset.value.data, t)


@handles(hopper.MbarrierAllocOp)
def _mbar_alloc(k: KernelLowering, op: hopper.MbarrierAllocOp) -> None:
    t = op.result.type
    assert isinstance(t, hopper.MbarriersType)
    k.vals[op.result] = Bars(op.offset.value.data, t.count.data)


@handles(hopper.MbarrierInitOp)
def _mbar_init(k: KernelLowering, op: hopper.MbarrierInitOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    first = k.cached("tid0", lambda: k.r(ptx.SetpOp("eq", "u32", k.tid(), k.imm(0, "u32"))))

    def init() -> None:
        for i in range(bars.count):
            addr = k.add_imm(k.smem_base(), bars.offset + 8 * i, "u32")
            k.emit(ptx.MbarrierInitOp(addr, op.count.value.data))

    k.guarded(first, init)


@handles(hopper.CtaSyncOp)
def _cta_sync(k: KernelLowering, op: hopper.CtaSyncOp) -> None:
    k.emit(ptx.FenceMbarrierInitOp())
    k.emit(ptx.BarSyncOp(0))


@handles(hopper.MbarrierWaitOp)
def _mbar_wait(k: KernelLowering, op: hopper.MbarrierWaitOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    phase = k.scalar(op.phase)
    again = k.label("wait")
    k.emit(ptx.LabelOp(again))
    ready = k.r(ptx.MbarrierTryWaitOp(addr, phase))
    k.emit(ptx.BraOp(again, ready, negate=True))


@handles(hopper.MbarrierArriveOp)
def _mbar_arrive(k: KernelLowering, op: hopper.MbarrierArriveOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    lane0 = k.cached("lane0", lambda: k.r(ptx.SetpOp("eq", "u32", k.lane(), k.imm(0, "u32"))))
    k.emit(ptx.MbarrierArriveOp(addr, lane0))


@handles(hopper.MbarrierArriveExpectTxOp)
def _mbar_expect(k: KernelLowering, op: hopper.MbarrierArriveExpectTxOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    k.emit(ptx.MbarrierArriveExpectTxOp(addr, op.bytes.value.data))


@handles(hopper.TmaLoadOp)
def _tma_load(k: KernelLowering, op: hopper.TmaLoadOp) -> None:
    ring = k.vals[op.ring]
    bars = k.vals[op.bars]
    assert isinstance(ring, Ring) and isinstance(bars, Bars)
    tt = ring.type.tile_type
    if len(tt.get_shape()) != 2:
        raise CompileError("convert-to-ptx: only 2-d TMA loads are supported yet", op)
    slot = k.scalar(op.slot)
    lead = list(op.indices)[:-2]  # leading dimensions of a rank-reducing load: box 1
    box = [tt.chunk_cols, tt.rows] + [1] * len(lead)
    name = k.params.tensor_map(op.source, box, tt.swizzle.data)
    tmap = k.cached(("tmap", name), lambda: k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name)))))
    dst0 = k.ring_slot_addr(ring, slot)
    bar = k.bar_addr(bars, slot)
    row, col = (k.scalar(i) for i in list(op.indices)[-2:])
    outer = [k.scalar(i) for i in reversed(lead)]
    for c in range(tt.num_chunks):
        dst = k.add_imm(dst0, c * tt.chunk_bytes, "u32")
        coords = [k.add_imm(col, c * tt.chunk_cols), row, *outer]
        k.emit(ptx.CpAsyncBulkTensorLoadOp(dst, tmap, bar, coords))


@handles(hopper.SmemSlotOp)
def _smem_slot(k: KernelLowering, op: hopper.SmemSlotOp) -> None:
    ring = k.vals[op.ring]
    assert isinstance(ring, Ring)
    k.vals[op.result] = SmemTile(k.ring_slot_addr(ring, k.scalar(op.slot)), ring.type.tile_type)


class _Descriptors:
    """Descriptors of one operand tile at byte offsets from its base: the start address
    field is (addr >> 4) & 0x3FFF and shared addresses stay below 2^18, so the descriptor
    at base + off (off a multiple of 16) is the base descriptor + (off >> 4): one add
    per k16 step instead of four instructions."""

    def __init__(self, k: KernelLowering, base: SSAValue):
        self.k, self.base = k, base
        self.desc: dict[tuple[int, int], SSAValue] = {}

    def at(self, off: int, lbo: int, sbo: int) -> SSAValue:
        k = self.k
        if (lbo, sbo) not in self.desc:
            self.desc[(lbo, sbo)] = _descriptor(k, self.base, lbo, sbo)
        d = self.desc[(lbo, sbo)]
        assert off % 16 == 0
        return d if off == 0 else k.r(ptx.AddOp("s64", d, k.imm(off >> 4, "s64")))


def _descriptor(k: KernelLowering, addr: SSAValue, lbo: int, sbo: int) -> SSAValue:
    """A wgmma shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2, "Matrix Descriptor
    Format") for a 128B-swizzled operand: start address, leading and stride byte
    offsets (each encoded >> 4), swizzle mode 1 (128B) in bits 62-63."""
    fields = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)
    enc = k.r(ptx.AndOp("b32", k.r(ptx.ShrOp("u32", addr, k.imm(4))), k.imm(0x3FFF)))
    wide = k.r(ptx.CvtOp("u64", "u32", enc))
    return k.r(ptx.OrOp("b64", wide, k.imm(fields, "b64")))


def _operand(
    t: hopper.SmemTileType, mn_major: bool, mn: int, kk: int, kstep: int
) -> tuple[int, int, int]:
    """(byte offset, leading byte offset, stride byte offset) of the K slice `kk` (of
    `kstep` elements, the MMA atom's K) of a wgmma operand whose MN extent starts at
    element `mn` of the tile.

    K-major tiles (rows MN, columns K) are 64-column chunks of 128-byte rows: a K step
    moves kstep elements within a row, a row 128 bytes; 8-row groups are 1024 bytes apart
    (SBO). MN-major tiles (rows K, columns MN) are the same chunks read the other way: a K
    step is kstep rows, 8-row K groups are 1024 bytes apart (SBO) and 64-element MN blocks
    are one chunk apart (LBO).
    """
    row = HOPPER.swizzle_bytes
    if not mn_major:
        chunk, within = divmod(kk * kstep, t.chunk_cols)
        return chunk * t.chunk_bytes + within * t.elem_bytes + mn * row, 16, 8 * row
    chunk, rest = divmod(mn, t.chunk_cols)
    assert rest == 0, "MN offsets of MN-major operands are whole chunks"
    return chunk * t.chunk_bytes + kk * kstep * row, t.chunk_bytes, 8 * row


def _atom(op: hopper.WgmmaOp, ab: str, transposed: bool) -> MmaAtom:
    """The wgmma family of these operand types (fp32 accumulation)."""
    atom = HOPPER.mma_atom(ab, ab, "f32")
    if atom is None:
        raise CompileError(f"convert-to-ptx: no wgmma multiplies {ab} by {ab} into f32", op)
    if transposed and not atom.mn_major:
        raise CompileError(f"convert-to-ptx: {ab} MMA operands must be K-major", op)
    return atom


def _issue_wgmmas(
    k: KernelLowering,
    op: hopper.WgmmaOp,
    acc_zero: tuple[Frag, bool],
    b: SmemTile,
    kdim: int,
    atom: MmaAtom,
    make: Callable[[int, int, SSAValue, SSAValue, list[SSAValue]], Operation],
) -> None:
    """The wgmmas of one `hopper.wgmma`, K step by K step and m64 block by block:
    `make(kk, mi, desc_b, scale_d, acc_regs)` builds each instruction (and computes its A
    operand). Every instruction that writes a wgmma register operand precedes the fence:
    A registers and descriptors are computed first (a write after the fence makes ptxas
    insert its own warpgroup arrive and serialize the wgmmas, C7520); the MMAs are issued
    back to back after it. `acc_zero` is `_accumulator`'s answer."""
    acc, zero_init = acc_zero
    layout = acc.layout
    if layout.n > HOPPER.mma_max_n:
        raise CompileError(
            f"convert-to-ptx: N={layout.n} > {HOPPER.mma_max_n} per MMA is not supported yet", op
        )
    tb = op.transpose_b is not None
    descs_b = _Descriptors(k, b.addr)
    issue = []
    for kk in range(kdim // atom.k):
        scale_d = _scale_d(k, zero_init, kk)
        desc_b = descs_b.at(*_operand(b.type, tb, 0, kk, atom.k))
        for mi in range(layout.m_reps):
            regs = [acc.regs[i] for i in layout.block_regs(mi)]
            issue.append(make(kk, mi, desc_b, scale_d, regs))
    k.emit(ptx.WgmmaFenceOp())
    for mma in issue:
        k.emit(mma)
    k.emit(ptx.WgmmaCommitOp())
    k.vals[op.result] = acc


@handles(hopper.WgmmaOp)
def _wgmma(k: KernelLowering, op: hopper.WgmmaOp) -> None:
    a, b = k.vals[op.a], k.vals[op.b]
    if isinstance(a, Frag):
        _wgmma_reg_a(k, op, a)
        return
    assert isinstance(a, SmemTile) and isinstance(b, SmemTile)
    if a.type.swizzle.data != 128 or b.type.swizzle.data != 128:
        raise CompileError("convert-to-ptx: wgmma operands must be 128B-swizzled", op)
    ta, tb = op.transpose_a is not None, op.transpose_b is not None
    acc_zero = _accumulator(k, op)
    layout = acc_zero[0].layout
    ab = elem_ptx_type(a.type.element_type)
    atom = _atom(op, ab, ta or tb)
    n = layout.n
    # This warp group's rows of A: K-major rows are 128 bytes; MN-major ones are chunks.
    rows = layout.rows_per_warp_group
    step = (rows // a.type.chunk_cols) * a.type.chunk_bytes if ta else rows * HOPPER.swizzle_bytes
    a_base = k.add(a.addr, k.r(ptx.MulOp("s32", _wg_local(k), k.imm(step), mode="lo")))
    descs_a = _Descriptors(k, a_base)

    def make(kk: int, mi: int, desc_b: SSAValue, scale_d: SSAValue, regs: list[SSAValue]):
        desc_a = descs_a.at(*_operand(a.type, ta, HOPPER.mma_m * mi, kk, atom.k))
        return ptx.WgmmaMmaAsyncOp(n, atom.k, ab, desc_a, desc_b, scale_d, regs, int(ta), int(tb))

    _issue_wgmmas(k, op, acc_zero, b, a.type.rows if ta else a.type.cols, atom, make)


def _is_zero_splat(f: Frag) -> bool:
    first = f.regs[0].owner
    return (
        all(r is f.regs[0] for r in f.regs)
        and isinstance(first, ptx.MovImmOp)
        and first.value.value.data == 0
    )


def _accumulator(k: KernelLowering, op: hopper.WgmmaOp) -> tuple[Frag, bool]:
    """The accumulator registers of a wgmma, and whether they start at zero.  A zero
    accumulator is not initialised with movs (a mov between wgmmas serializes them,
    ptxas C7515/C7520): its registers are only declared, and the first K step runs with
    scale-d false (D = A*B)."""
    f = k.frag(op.acc)
    if not _is_zero_splat(f):
        return k.materialize(f), False
    return f.like([k.r(ptx.DeclareRegOp("f32")) for _ in f.regs], "f32"), True


def _scale_d(k: KernelLowering, zero_init: bool, kk: int) -> SSAValue:
    if zero_init and kk == 0:
        return k.cached("false", lambda: k.r(ptx.SetpOp("ne", "s32", k.imm(0), k.imm(0))))
    return k.true_pred()


def _pack_pair(k: KernelLowering, lo: SSAValue, hi: SSAValue) -> SSAValue:
    """One .b32 register holding two 16-bit values.  When both were just rounded from
    f32, round and pack in one `cvt.rn.bf16x2.f32` from the f32 values (one register
    instead of three live ones; the separate conversions become dead)."""
    lo_op, hi_op = lo.owner, hi.owner
    if isinstance(lo_op, ptx.UnpackB16Op) and lo_op is hi_op and lo is lo_op.lo and hi is lo_op.hi:
        return lo_op.src
    if (
        isinstance(lo_op, ptx.CvtOp)
        and isinstance(hi_op, ptx.CvtOp)
        and lo_op.stype.data == hi_op.stype.data == "f32"
        and lo_op.dtype.data == hi_op.dtype.data
        and lo_op.dtype.data in ("bf16", "f16")
    ):
        return k.r(ptx.CvtPackOp(lo_op.dtype.data + "x2", hi_op.src, lo_op.src))
    return k.r(ptx.PackB16Op(lo, hi))


def _wgmma_reg_a(k: KernelLowering, op: hopper.WgmmaOp, a: Frag) -> None:
    """The register-A form: A's k16 slice kk of m64 block mi is the accumulator-layout
    registers 8kk..8kk+7 of that block, packed in pairs (PTX ISA 9.7.15.5.1, "Register
    fragments for A": a0 = (r, 2t..2t+1), a1 = (r+8, ...), a2 = (r, 2t+8..), a3 = (r+8,
    2t+8..), which are accumulator registers 8kk+0,1 / +2,3 / +4,5 / +6,7)."""
    b = k.vals[op.b]
    assert isinstance(b, SmemTile)
    if a.dim is not None or a.dtype not in ("bf16", "f16"):
        raise CompileError(
            "convert-to-ptx: a register A operand must be a 16-bit (bf16/f16) 2-d tile", op
        )
    if b.type.swizzle.data != 128:
        raise CompileError("convert-to-ptx: wgmma B operands must be 128B-swizzled", op)
    acc_zero = _accumulator(k, op)
    layout = acc_zero[0].layout
    al = a.layout
    if al.m != layout.m or al.warp_groups != layout.warp_groups or al.n % 16:
        raise CompileError("convert-to-ptx: register A operand layout does not fit the MMA", op)
    if elem_ptx_type(b.type.element_type) != a.dtype:
        raise CompileError("convert-to-ptx: MMA operand element types differ", op)
    atom = _atom(op, a.dtype, op.transpose_b is not None)
    tb = int(op.transpose_b is not None)

    def make(kk: int, mi: int, desc_b: SSAValue, scale_d: SSAValue, regs: list[SSAValue]):
        base = mi * al.regs_per_block + 8 * kk
        pairs = [(a.regs[base + 2 * q], a.regs[base + 2 * q + 1]) for q in range(4)]
        regs_a = [_pack_pair(k, lo, hi) for lo, hi in pairs]
        return ptx.WgmmaMmaAsyncRegAOp(layout.n, a.dtype, regs_a, desc_b, scale_d, regs, tb)

    _issue_wgmmas(k, op, acc_zero, b, al.n, atom, make)


@handles(hopper.WgmmaWaitOp)
def _wgmma_wait(k: KernelLowering, op: hopper.WgmmaWaitOp) -> None:
    k.emit(ptx.WgmmaWaitOp(op.pending.value.data))
    k.vals[op.result] = k.vals[op.acc]


def _wg_local(k: KernelLowering) -> SSAValue:
    """This thread's warp group index within its partition."""
    part = k.part
    assert part is not None
    return k.cached(
        "wg_local",
        lambda: k.r(
            ptx.SubOp("s32", k.r(ptx.ShrOp("u32", k.tid(), k.imm(7))), k.imm(part.first_wg))
        ),
    )


@handles(hopper.StoreFragmentOp)
def _store_fragment(k: KernelLowering, op: hopper.StoreFragmentOp) -> None:
    """Registers -> a 128B-swizzled shared tile: 16-byte granule g of row r sits at
    granule g ^ (r % 8).  In the accumulator layout r % 8 is lane / 4 for every register
    of a thread, so each thread XORs with one key, and a warp's 4-byte stores of one
    register pair hit 32 distinct banks."""
    f = k.frag(op.value)
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    layout = f.layout
    tt = t.type
    if tt.swizzle.data != 128 or tt.elem_bytes != 2 or tt.rows != layout.m or tt.cols != layout.n:
        raise CompileError(
            "convert-to-ptx: store_fragment needs a 128B-swizzled 16-bit tile "
            "of the fragment's shape",
            op,
        )
    part = k.part
    assert part is not None
    # The warp group's previous bulk store from this tile (persistent kernels) must have
    # been read before any thread writes: its issuing thread waits here, not right after
    # issuing it, so the store overlaps the next tile's main loop.
    k.guarded(_wg_leader(k), lambda: k.emit(ptx.CpAsyncBulkWaitReadOp(0)))
    first = k.barriers.get("warp group", HOPPER.max_consumer_warp_groups, preferred=1)
    k.emit(ptx.BarSyncRegOp(k.add_imm(_wg_local(k), first), HOPPER.warp_group_size))
    row0, _ = k.thread_coords(layout)
    lane = k.lane()
    key = k.r(ptx.ShrOp("u32", lane, k.imm(2)))
    base = k.r(ptx.FmaOp("s32", row0, k.imm(128), t.addr))
    base = k.r(ptx.FmaOp("s32", k.r(ptx.AndOp("b32", lane, k.imm(3))), k.imm(4), base))
    xor_off = [
        k.r(ptx.ShlOp("b32", k.r(ptx.XorOp("b32", key, k.imm(g))), k.imm(4))) for g in range(8)
    ]
    for i in range(0, layout.num_regs, 2):
        dr, dc = layout.reg_offset(i)
        if dr % 8 or dc % 8 or layout.reg_offset(i + 1) != (dr, dc + 1):
            raise CompileError("convert-to-ptx: fragment layout does not pair columns", op)
        q = dc // 8
        off = dr * 128 + (q // 8) * tt.chunk_bytes
        addr = k.add(k.add_imm(base, off), xor_off[q % 8])
        k.emit(ptx.StSharedOp("b32", addr, k.r(ptx.PackB16Op(f.regs[i], f.regs[i + 1]))))
    k.emit(ptx.FenceProxyAsyncOp())


@handles(hopper.ConsumerSyncOp)
def _consumer_sync(k: KernelLowering, op: hopper.ConsumerSyncOp) -> None:
    part = k.part
    assert part is not None
    bar = k.barriers.get("consumer partition", preferred=HOPPER.named_barriers - 1)
    k.emit(ptx.BarSyncOp(bar, HOPPER.warp_group_size * part.warp_groups))


@handles(hopper.TurnOp)
def _turn(k: KernelLowering, op: hopper.TurnOp) -> None:
    part = k.part
    assert part is not None
    if part.warp_groups != 2:
        raise CompileError("convert-to-ptx: ping-pong turns need two consumer warp groups", op)
    turn = k.barriers.get("ping-pong turns", 2, preferred=8)  # one per consumer warp group
    wg = _wg_local(k)
    mine = k.add_imm(wg, turn)
    other = k.r(ptx.SubOp("s32", k.imm(turn + 1), wg))  # turn + (1 - wg)
    kind = op.kind.data
    if kind == "wait":
        k.emit(ptx.BarSyncRegOp(mine, 2 * HOPPER.warp_group_size))
    elif kind == "pass":
        k.emit(ptx.BarArriveRegOp(other, 2 * HOPPER.warp_group_size))
    else:
        # init: warp group 1 hands the first turn to 0; end: 0 takes the last one back.
        first = k.r(ptx.SetpOp("eq", "s32", wg, k.imm(1 if kind == "init" else 0)))
        bar = k.imm(turn)
        emit = ptx.BarArriveRegOp if kind == "init" else ptx.BarSyncRegOp
        k.guarded(first, lambda: k.emit(emit(bar, 2 * HOPPER.warp_group_size)))


@handles(hopper.TmaStoreOp)
def _tma_store(k: KernelLowering, op: hopper.TmaStoreOp) -> None:
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    part = k.part
    assert part is not None and part.role == "consumer"
    tt = t.type
    rows = tt.rows // part.warp_groups
    wg = _wg_local(k)
    # Named barrier first + w: the threads of warp group w have written their rows.
    first = k.barriers.get("warp group", HOPPER.max_consumer_warp_groups, preferred=1)
    bar_id = k.add_imm(wg, first)
    k.emit(ptx.BarSyncRegOp(bar_id, HOPPER.warp_group_size))
    lead = list(op.indices)[:-2]  # leading dimensions of a rank-reducing store: box 1
    name = k.params.tensor_map(op.dest, [tt.chunk_cols, rows] + [1] * len(lead), tt.swizzle.data)

    def issue() -> None:
        tmap = k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name))))
        row_off = k.r(ptx.MulOp("s32", wg, k.imm(rows), mode="lo"))
        src0 = k.r(ptx.FmaOp("s32", row_off, k.imm(128), t.addr))
        row = k.add(k.scalar(op.indices[-2]), row_off)
        col = k.scalar(op.indices[-1])
        outer = [k.scalar(i) for i in reversed(lead)]
        for c in range(tt.num_chunks):
            src = k.add_imm(src0, c * tt.chunk_bytes, "u32")
            coords = [k.add_imm(col, c * tt.chunk_cols), row, *outer]
            k.emit(ptx.CpAsyncBulkTensorStoreOp(src, tmap, coords))
        k.emit(ptx.CpAsyncBulkCommitOp())

    k.guarded(_wg_leader(k), issue)


def _wg_leader(k: KernelLowering) -> SSAValue:
    """Whether this thread is its warp group's first (the producer's one thread; the
    consumer thread that issues a warp group's bulk stores)."""
    return k.cached(
        "wg_leader",
        lambda: k.r(
            ptx.SetpOp("eq", "u32", k.r(ptx.AndOp("b32", k.tid(), k.imm(127))), k.imm(0, "u32"))
        ),
    )


@dataclass(frozen=True)
class ConvertToPtxPass(ModulePass):
    name = "convert-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cse(op)
        region_dce(op.body)
        for kern in [o for o in op.body.block.ops if isinstance(o, tile.KernelOp)]:
            module = KernelLowering(kern).run()
            Rewriter.replace_op(kern, module)
