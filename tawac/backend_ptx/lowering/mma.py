"""`hopper.wgmma` to `wgmma.mma_async` (fence, MMAs, commit) and `wgmma.wait_group`.

Shared-memory matrix descriptors for 128B-swizzled operands (PTX ISA 9.7.15.5.1.2,
"Matrix Descriptor Format") and the operand offsets of each K step and m64 block, as
`SwizzledTile.mma_operand` gives them (`tawac/target/layouts.py`), the
accumulator (a zero one only declared, the first step with scale-d false), and the
register-A form with A packed from accumulator-layout registers (PTX ISA 9.7.15.5.1,
"Register fragments for A").
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type
from xdsl.ir import Attribute, Operation, SSAValue

from tawac.backend_ptx.lowering.state import (
    Frag,
    KernelLowering,
    SmemTile,
    elem_ptx_type,
    handles,
    wg_local,
)
from tawac.dialects import hopper, ptx
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, MmaAtom
from tawac.target.layouts import MatrixDescriptor


class _Descriptors:
    """Descriptors of one operand tile at byte offsets from its base: the descriptor of
    base + off is the base's plus `MatrixDescriptor.step(off)`, one add per k16 step
    instead of four instructions."""

    def __init__(self, k: KernelLowering, base: SSAValue):
        self.k, self.base = k, base
        self.desc: dict[MatrixDescriptor, SSAValue] = {}

    def at(self, off: int, fields: MatrixDescriptor) -> SSAValue:
        k = self.k
        if fields not in self.desc:
            self.desc[fields] = _descriptor(k, self.base, fields)
        d = self.desc[fields]
        return d if off == 0 else k.r(ptx.AddOp("s64", d, k.imm(fields.step(off), "s64")))


def _descriptor(k: KernelLowering, addr: SSAValue, fields: MatrixDescriptor) -> SSAValue:
    """A wgmma shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2, "Matrix Descriptor
    Format"): the start address field of `addr` or'ed with the layout's other fields."""
    enc = k.r(ptx.ShrOp("u32", addr, k.imm(fields.ADDRESS_SHIFT)))
    enc = k.r(ptx.AndOp("b32", enc, k.imm(fields.ADDRESS_MASK)))
    wide = k.r(ptx.CvtOp("u64", "u32", enc))
    return k.r(ptx.OrOp("b64", wide, k.imm(fields.fields(), "b64")))


def _operand_type(t: Attribute) -> str:
    """The wgmma type of an operand element type: bf16, f16, e4m3 or e5m2."""
    if isinstance(t, Float8E4M3FNType):
        return "e4m3"
    if isinstance(t, Float8E5M2Type):
        return "e5m2"
    return elem_ptx_type(t)


def _atom(op: hopper.WgmmaOp, a: str, b: str, ta: bool = False, tb: bool = False) -> MmaAtom:
    """The wgmma family of these operand types (fp32 accumulation), with the operands'
    majors checked against it (`ta`/`tb`: A stored KxM, B stored KxN, i.e. MN-major)."""
    atom = HOPPER.mma_atom(a, b, "f32")
    if atom is None:
        raise CompileError(f"convert-to-ptx: no wgmma multiplies {a} by {b} into f32", op)
    if atom.mn_major:
        return atom
    kind = "fp8" if a in ptx.WGMMA_FP8_TYPES else a
    if ta:
        raise CompileError(
            f"convert-to-ptx: the left operand (A) of this {a} x {b} tile.dot is MN-major "
            f"(a KxM tile, transpose_lhs); {kind} wgmma needs K-major operands: transpose "
            "it in the source layout (store A as MxK) and drop transpose_lhs",
            op,
        )
    if tb:
        raise CompileError(
            f"convert-to-ptx: the right operand (B) of this {a} x {b} tile.dot is MN-major "
            f"(a KxN tile without transpose_rhs); {kind} wgmma needs K-major operands: "
            "transpose it in the source layout (store B as NxK) and use transpose_rhs",
            op,
        )
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
    if kdim % atom.k:
        raise CompileError(
            f"convert-to-ptx: K={kdim} of this MMA is not a multiple of {atom.k}, the K of one "
            f"{atom.a} wgmma",
            op,
        )
    descs_b = _Descriptors(k, b.addr)
    issue = []
    for kk in range(kdim // atom.k):
        scale_d = _scale_d(k, zero_init, kk)
        desc_b = descs_b.at(*b.type.layout.mma_operand(tb, 0, kk * atom.k))
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
    ab, bt = _operand_type(a.type.element_type), _operand_type(b.type.element_type)
    atom = _atom(op, ab, bt, ta, tb)
    n = layout.n
    # This warp group's rows of A: where its MN extent starts in the tile.
    a_tile = a.type.layout
    step, _ = a_tile.mma_operand(ta, layout.rows_per_warp_group, 0)
    a_base = k.add(a.addr, k.r(ptx.MulOp("s32", wg_local(k), k.imm(step), mode="lo")))
    descs_a = _Descriptors(k, a_base)

    def make(kk: int, mi: int, desc_b: SSAValue, scale_d: SSAValue, regs: list[SSAValue]):
        desc_a = descs_a.at(*a_tile.mma_operand(ta, HOPPER.mma_m * mi, kk * atom.k))
        return ptx.WgmmaMmaAsyncOp(
            n, atom.k, ab, desc_a, desc_b, scale_d, regs, int(ta), int(tb), b_type=bt
        )

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


def pack_pair(k: KernelLowering, lo: SSAValue, hi: SSAValue) -> SSAValue:
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
    if _operand_type(b.type.element_type) != a.dtype:
        raise CompileError("convert-to-ptx: MMA operand element types differ", op)
    atom = _atom(op, a.dtype, a.dtype, tb=op.transpose_b is not None)
    tb = int(op.transpose_b is not None)

    def make(kk: int, mi: int, desc_b: SSAValue, scale_d: SSAValue, regs: list[SSAValue]):
        pairs = al.a_operand_pairs(mi, kk)
        regs_a = [pack_pair(k, a.regs[lo], a.regs[hi]) for lo, hi in pairs]
        return ptx.WgmmaMmaAsyncRegAOp(layout.n, a.dtype, regs_a, desc_b, scale_d, regs, tb)

    _issue_wgmmas(k, op, acc_zero, b, al.n, atom, make)


@handles(hopper.WgmmaWaitOp)
def _wgmma_wait(k: KernelLowering, op: hopper.WgmmaWaitOp) -> None:
    k.emit(ptx.WgmmaWaitOp(op.pending.value.data))
    k.vals[op.result] = k.vals[op.acc]
