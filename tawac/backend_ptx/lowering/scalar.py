"""Scalar and elementwise `arith`/`math` ops, and the kernel's coordinates.

Constants, integer and float binary ops (division by a reciprocal where the fastmath
flags allow it), `cmpi`/`cmpf` to `setp`, `select` to `selp`, float casts to `cvt`,
`negf`/`exp2`/`exp` (`ex2.approx`), `erf` and `tanh` (by `ex2.approx` and a
reciprocal); each on a scalar register or register by register on
a `Frag`.  Program and CTA ids (`%ctaid`, `%nctaid`), cluster ids and ranks (`%clusterid`,
`%nclusterid`, `%cluster_ctarank`) and tensor dimensions (`ld.param`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import BlockArgument, Operation, SSAValue

from tawac.backend_ptx import int_arith
from tawac.backend_ptx.lowering.state import (
    Frag,
    KernelLowering,
    elem_ptx_type,
    handles,
    map1,
    map2,
    reg_kind,
    vector_splat,
)
from tawac.dialects import hopper, ptx, tile
from tawac.support.diagnostics import CompileError

_CMPI = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge", 6: "lo", 7: "ls", 8: "hi", 9: "hs"}


_CMPI_TYPE = {0: "s32", 1: "s32", 2: "s32", 3: "s32", 4: "s32", 5: "s32"}


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
                k.vals[op.result] = vector_splat(k, op.result, op, reg, "f32")
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
    if ty == "b32" and all(reg_kind(x) == "pred" for x in (a, b)):
        k.vals[op.results[0]] = k.r(cls("pred", a, b))
        return
    k.vals[op.results[0]] = int_arith.binary(k, cls, ty, a, b)


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
        ty = "f32" if reg_kind(t) == "f32" else "s32"
        k.vals[op.result] = k.r(ptx.SelpOp(ty, t, f, c))
        return
    if isinstance(c, SSAValue) and isinstance(t, Frag) and isinstance(f, Frag):
        c = t.like([c] * len(t.regs), "pred")  # a uniform condition
    if isinstance(c, Frag) and isinstance(t, Frag) and isinstance(f, Frag):
        k.vals[op.result] = select_frags(k, op, c, t, f)
        return
    raise CompileError("convert-to-ptx: select of a tile needs a tile condition", op)


def select_frags(k: KernelLowering, op: Operation, c: Frag, t: Frag, f: Frag) -> Frag:
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


@handles(arith.SIToFPOp, arith.UIToFPOp)
def _int_to_float(k: KernelLowering, op: arith.SIToFPOp | arith.UIToFPOp) -> None:
    """A scalar index or i32 (a 32-bit register) to f32, rounded to nearest (a row
    length as the divisor of a mean)."""
    if not isinstance(op.result.type, Float32Type) or not isinstance(
        op.input.type, IndexType | IntegerType
    ):
        raise CompileError(f"convert-to-ptx: {op.name} of a tile or to another type", op)
    if isinstance(op.input.type, IntegerType) and op.input.type.width.data != 32:
        raise CompileError(f"convert-to-ptx: {op.name} of an integer of other than 32 bits", op)
    stype = "s32" if isinstance(op, arith.SIToFPOp) else "u32"
    k.vals[op.result] = k.r(ptx.CvtOp("f32", stype, k.scalar(op.input), rnd="rn"))


_FLOAT_BINARY = {
    arith.AddfOp: ptx.AddOp,
    arith.SubfOp: ptx.SubOp,
    arith.MulfOp: ptx.MulOp,
    arith.DivfOp: ptx.DivOp,
    arith.MaximumfOp: ptx.MaxOp,
    arith.MinimumfOp: ptx.MinOp,
    # max.f32 / min.f32 give the other operand where one is NaN: IEEE maxNum / minNum,
    # which is what maxnumf / minnumf mean (PTX ISA 9.7.3.11, 9.7.3.12)
    arith.MaxnumfOp: ptx.MaxOp,
    arith.MinnumfOp: ptx.MinOp,
}


@handles(*_FLOAT_BINARY)
def _float_binary(k: KernelLowering, op: Operation) -> None:
    cls = _FLOAT_BINARY[type(op)]  # type: ignore[index]
    # add/sub/mul without a rounding modifier let ptxas contract a multiply and an add
    # into one fma (as CUDA does by default); div.f32 needs one.
    mode = "rn" if cls is ptx.DivOp else None
    a, b = (_operand(k, v) for v in op.operands)
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
        if isinstance(op, arith.MulfOp) and _rescale_in_place(k, op, a, b):
            return
        k.vals[op.results[0]] = a.like(
            map2(k, a, b, lambda x, y: cls("f32", x, y, mode=mode)), "f32"
        )
        return
    raise CompileError(f"convert-to-ptx: operands of {op.name} must both be tiles or scalars", op)


def _rescale_in_place(k: KernelLowering, op: arith.MulfOp, a: Frag, b: Frag) -> bool:
    """With `skip_rescale`: a loop-carried 2-d tile read only here, times a tile whose
    registers repeat (a broadcast row vector: attention's 2^(m - m')), multiplied in its
    own registers, and not at all in a warp where every factor is exactly 1
    (`vote.sync.all`, a uniform branch): x * 1 is x, bit for bit. Whether it applied."""
    lhs = op.lhs
    if not k.skip_rescale or a.dim is not None or b.dim is not None:
        return False
    if not isinstance(lhs, BlockArgument) or not isinstance(lhs.owner.parent_op(), scf.ForOp):
        return False
    if lhs.uses.get_length() != 1 or len(set(a.regs)) != len(a.regs):
        return False
    factors = list(dict.fromkeys(b.regs))
    if len(factors) * 2 > len(b.regs):  # not a broadcast: nothing shared to test
        return False
    one = k.fimm(1.0)
    same = None
    for f in factors:
        eq = k.r(ptx.SetpOp("eq", "f32", f, one))
        same = eq if same is None else k.r(ptx.AndOp("pred", same, eq))
    assert same is not None

    def scale() -> None:
        for x, y in zip(a.regs, b.regs, strict=True):
            k.emit(ptx.AssignOp("f32", x, k.r(ptx.MulOp("f32", x, y))))

    done = k.label("rescaled")
    k.emit(ptx.BraOp(done, k.r(ptx.VoteAllOp(same)), uni=True))
    with k.scope():
        scale()
    k.emit(ptx.LabelOp(done))
    k.vals[op.results[0]] = a
    return True


def _operand(k: KernelLowering, v: SSAValue) -> object:
    """What `v` lowered to; a scalar kernel argument (`%scale_a * %scale_b`) is its
    parameter, loaded once."""
    x = k.vals.get(v)
    if x is None and isinstance(v, BlockArgument) and v.owner is k.kernel.body.block:
        return k.scalar(v)
    return x


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
    inv = b.like(map1(k, b, lambda y: ptx.RcpOp(y, mode)), "f32")
    k.vals[op.result] = a.like(map2(k, a, inv, lambda x, y: ptx.MulOp("f32", x, y)), "f32")


_LOG2E = 1.4426950408889634
#: ln 2: log(x) = log2(x) ln 2.
_LN2 = 0.6931471805599453


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
    """`ex2.approx.ftz.f32`; with `exp2_fma` N, every N-th register of a tile by
    `_exp2_fma` instead (the MUFU unit does 16 a clock per SM, the FMA pipe 128)."""
    src = k.vals.get(op.operands[0])
    every = k.exp2_fma
    if not every or not isinstance(src, Frag) or src.dtype != "f32":
        _f32_unary(k, op, lambda x: k.r(ptx.Ex2Op(x)))
        return
    memo: dict[SSAValue, SSAValue] = {}
    regs = []
    for i, x in enumerate(src.regs):
        if x not in memo:
            memo[x] = _exp2_fma(k, x) if i % every == every - 1 else k.r(ptx.Ex2Op(x))
        regs.append(memo[x])
    k.vals[op.results[0]] = src.like(regs, "f32")


#: 2^f on [0, 1) = 1 + f (c1 + f (c2 + f c3)): least squares in the relative error,
#: at most 1.7e-4 (bf16's half ulp is 2e-3).
_EXP2_CUBIC = (0.69503617, 0.22830825, 0.07632546)
#: 1.5 * 2^23: x + this, rounded toward -inf, holds floor(x) in its low mantissa bits.
_ROUND_FLOOR = 12582912.0


def _exp2_fma(k: KernelLowering, x: SSAValue) -> SSAValue:
    """2^x on the FMA and integer pipes: x clamped to >= -127 (2^-127 is below f32's
    normal range, as ftz's ex2 gives 0), n = floor(x) by the 1.5 * 2^23 rounding trick,
    p = the cubic at x - n, and n added to p's exponent bits. Exact at x = 0."""
    c1, c2, c3 = _EXP2_CUBIC
    x = k.r(ptx.MaxOp("f32", x, k.fimm(-127.0)))
    t = k.r(ptx.AddOp("f32", x, k.fimm(_ROUND_FLOOR), mode="rm"))
    n = k.r(ptx.SubOp("f32", t, k.fimm(_ROUND_FLOOR), mode="rn"))
    f = k.r(ptx.SubOp("f32", x, n, mode="rn"))
    p = k.r(ptx.FmaOp("f32", f, k.fimm(c3), k.fimm(c2)))
    p = k.r(ptx.FmaOp("f32", p, f, k.fimm(c1)))
    p = k.r(ptx.FmaOp("f32", p, f, k.fimm(1.0)))
    e = k.r(ptx.ShlOp("b32", k.r(ptx.BitcastOp("b32", t)), k.imm(23, "u32")))
    bits = k.r(ptx.AddOp("s32", k.r(ptx.BitcastOp("b32", p)), e))
    return k.r(ptx.BitcastOp("f32", bits))


@handles(math.Log2Op)
def _log2(k: KernelLowering, op: math.Log2Op) -> None:
    _f32_unary(k, op, lambda x: k.r(ptx.Lg2Op(x)))


@handles(math.LogOp)
def _log(k: KernelLowering, op: math.LogOp) -> None:
    """log(x) = log2(x) * ln 2 (`lg2.approx.ftz.f32`)."""
    _f32_unary(k, op, lambda x: k.r(ptx.MulOp("f32", k.r(ptx.Lg2Op(x)), k.fimm(_LN2), mode="rn")))


@handles(math.SqrtOp)
def _sqrt(k: KernelLowering, op: math.SqrtOp) -> None:
    _f32_unary(k, op, lambda x: k.r(ptx.SqrtOp(x)))


@handles(math.RsqrtOp)
def _rsqrt(k: KernelLowering, op: math.RsqrtOp) -> None:
    _f32_unary(k, op, lambda x: k.r(ptx.RsqrtOp(x)))


@handles(math.ExpOp)
def _exp(k: KernelLowering, op: math.ExpOp) -> None:
    """exp(x) = 2^(x * log2 e) (`ex2.approx.ftz.f32`, relative error ~2^-22)."""
    _f32_unary(k, op, lambda x: k.r(ptx.Ex2Op(k.r(ptx.MulOp("f32", x, k.fimm(_LOG2E), mode="rn")))))


#: erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), z >= 0: Numerical Recipes' erfcc
#: (a Chebyshev fit, fractional error below 1.2e-7), P's coefficients from t^0 up.
_ERFC = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


def _erf_of(k: KernelLowering, x: SSAValue) -> SSAValue:
    """erf(x) = sign(x) (1 - erfc(|x|)), erfc by `_ERFC` with one reciprocal and one
    `ex2.approx`: at most 4e-7 from the exact value over f32 (measured in float32
    arithmetic against math.erf on [-7, 7]; PTX has no erf instruction)."""
    z = k.r(ptx.MaxOp("f32", x, k.r(ptx.NegOp("f32", x))))
    t = k.r(ptx.RcpOp(k.r(ptx.FmaOp("f32", z, k.fimm(0.5), k.fimm(1.0)))))
    p = k.fimm(_ERFC[-1])
    for c in reversed(_ERFC[:-1]):
        p = k.r(ptx.FmaOp("f32", p, t, k.fimm(c)))
    y = k.r(ptx.FmaOp("f32", k.r(ptx.NegOp("f32", z)), z, p))
    e = k.r(ptx.Ex2Op(k.r(ptx.MulOp("f32", y, k.fimm(_LOG2E), mode="rn"))))
    r = k.r(ptx.SubOp("f32", k.fimm(1.0), k.r(ptx.MulOp("f32", t, e, mode="rn")), mode="rn"))
    below = k.r(ptx.SetpOp("lt", "f32", x, k.fimm(0.0)))
    return k.r(ptx.SelpOp("f32", k.r(ptx.NegOp("f32", r)), r, below))


@handles(math.ErfOp)
def _erf(k: KernelLowering, op: math.ErfOp) -> None:
    """`math.erf` (exact GELU's `0.5 x (1 + erf(x / sqrt 2))`): `_erf_of`."""
    _f32_unary(k, op, lambda x: _erf_of(k, x))


@handles(math.TanhOp)
def _tanh(k: KernelLowering, op: math.TanhOp) -> None:
    """tanh(x) = 1 - 2 / (2^(2x log2 e) + 1), with `ex2.approx` and `rcp.rn`: at most
    2e-7 from the exact value (not `tanh.approx.f32`, whose relative error is 2^-11)."""

    def emit(x: SSAValue) -> SSAValue:
        e = k.r(ptx.Ex2Op(k.r(ptx.MulOp("f32", x, k.fimm(2 * _LOG2E), mode="rn"))))
        inv = k.r(ptx.RcpOp(k.r(ptx.AddOp("f32", e, k.fimm(1.0), mode="rn"))))
        return k.r(ptx.FmaOp("f32", inv, k.fimm(-2.0), k.fimm(1.0)))

    _f32_unary(k, op, emit)


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
        k.vals[op.result] = a.like(map2(k, a, b, lambda x, y: ptx.SetpOp(cmp, "f32", x, y)), "pred")
        return
    raise CompileError("convert-to-ptx: arith.cmpf needs two f32 tiles or scalars", op)


@handles(arith.TruncFOp, arith.ExtFOp)
def _float_cast(k: KernelLowering, op: Operation) -> None:
    src = k.frag(op.operands[0])
    rt = op.results[0].type
    assert isinstance(rt, TensorType)
    dst = elem_ptx_type(rt.element_type)
    rnd = "rn" if isinstance(op, arith.TruncFOp) else None
    regs = map1(k, src, lambda x: ptx.CvtOp(dst, src.dtype, x, rnd=rnd))
    k.vals[op.results[0]] = src.like(regs, dst)


@handles(tile.ProgramIdOp)
def _program_id(k: KernelLowering, op: tile.ProgramIdOp) -> None:
    k.vals[op.result] = _special_reg(k, f"ctaid.{'xyz'[op.axis.data]}")


#: The hopper ops that read one special register (PTX ISA 10): CTA and cluster ids.
_SPECIAL_REGS: dict[type[Operation], str] = {
    hopper.CtaIdOp: "ctaid.x",
    hopper.NumCtasOp: "nctaid.x",
    hopper.ClusterCtaRankOp: "cluster_ctarank",
    hopper.ClusterIdOp: "clusterid.x",
    hopper.NumClustersOp: "nclusterid.x",
}


@handles(*_SPECIAL_REGS)
def _special_reg_op(k: KernelLowering, op: Operation) -> None:
    k.vals[op.results[0]] = _special_reg(k, _SPECIAL_REGS[type(op)])


def _special_reg(k: KernelLowering, name: str) -> SSAValue:
    """`mov.u32 %r, %name;`, read once per kernel (a program id x and a CTA id share it)."""
    return k.cached(("sreg", name), lambda: k.r(ptx.SpecialRegOp(name)))


@handles(tile.LoadIndexOp)
def _load_index(k: KernelLowering, op: tile.LoadIndexOp) -> None:
    """One `ld.global.s32` of the element at the coordinates (every thread of the
    partition reads the same word), -1 where a coordinate is outside the tensor."""
    addr = k.r(ptx.LdParamOp("u64", k.params.pointer(op.source)))
    inside: SSAValue | None = None
    for d, index in enumerate(op.indices):
        i = k.scalar(index)
        size = k.r(ptx.LdParamOp("s32", k.params.dim(op.source, d)))
        ok = k.r(ptx.AndOp("pred", k.r(ptx.SetpOp("lt", "s32", i, size)),
                           k.r(ptx.SetpOp("ge", "s32", i, k.imm(0)))))  # fmt: skip
        inside = ok if inside is None else k.r(ptx.AndOp("pred", inside, ok))
        stride = k.r(ptx.LdParamOp("s64", k.params.stride(op.source, d)))
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", i)), stride, mode="lo"))
        addr = k.r(ptx.AddOp("s64", addr, k.r(ptx.MulOp("s64", off, k.imm(4, "s64"), mode="lo"))))
    # -1 written into a declared register, not a `mov` of a constant: the integer
    # folding (`int_arith`) takes a register made by `mov imm` for that constant, and
    # this one is overwritten by the load
    value = k.r(ptx.DeclareRegOp("b32"))
    k.emit(ptx.AssignImmOp("s32", value, -1))
    assert inside is not None
    k.guarded(inside, lambda: k.emit(ptx.AssignOp("s32", value, k.r(ptx.LdGlobalOp("s32", addr)))))
    k.vals[op.result] = value


@handles(tile.DimOp)
def _dim(k: KernelLowering, op: tile.DimOp) -> None:
    name = k.params.dim(op.source, op.dim.data)
    k.vals[op.result] = k.cached(("param", name), lambda: k.r(ptx.LdParamOp("s32", name)))
