"""Module verification: xDSL's op verifiers plus the rules xDSL 0.74 leaves out.

- *Definition before use*: every operand is a value of an enclosing block defined
  earlier in it (the regions of tawac's dialects and of `scf` are single blocks, so this
  is MLIR's dominance). xDSL's parser accepts forward references within a block.
- `scf.if` with results yields that many values of those types from both branches
  (xDSL inserts an empty `scf.yield` where a branch has none).
- `arith.ext*` widens and `arith.trunc*` narrows its element type.
- Constants fit their type: an `index` constant is a 64-bit integer; a float constant is
  finite in its type or written as infinity.

Every failure is one `CompileError` at the op's location.

An op whose verification reads nothing but its own operand and result types, properties
and attributes (an IRDL op without regions, traits other than local ones (`Pure`,
`SameOperandsAndResultType`, ...), successors or a verifier of its own,
not ending its block: most of the PTX dialect's thousands of ops per kernel) is verified
once per such signature in a process (`_signature`): xDSL's checks of one cost as much as
a fifth of a compile.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    ShapedType,
)
from xdsl.interfaces import _HasFolderInterfaceTrait
from xdsl.ir import Block, ErasedSSAValue, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.traits import OpTrait, SameOperandsAndResultType
from xdsl.utils.exceptions import VerifyException

from tawac.support.diagnostics import CompileError, location_of

# Largest finite value of each float type (IEEE binary16/32/64; bfloat16 keeps f32's
# exponent with 8 significand bits; the fp8 formats of OCP's 8-bit float spec).
_FLOAT_MAX = {
    Float8E4M3FNType: 448.0,
    Float8E5M2Type: 57344.0,
    Float16Type: 65504.0,
    BFloat16Type: float.fromhex("0x1.fep127"),
    Float32Type: float.fromhex("0x1.fffffep127"),
    Float64Type: float.fromhex("0x1.fffffffffffffp1023"),
}
_INDEX_MIN, _INDEX_MAX = -(1 << 63), (1 << 63) - 1


def verify_message(e: Exception) -> str:
    msg = str(e.args[0]) if e.args else str(e)
    msg = msg.removeprefix("Operation does not verify: ")
    return msg.strip().splitlines()[0] if msg.strip() else type(e).__name__


def _value_name(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint is not None else "a value"


def _check_definitions(block: Block, visible: set[SSAValue]) -> None:
    """Each operand is visible: a block argument or an earlier result of this block or
    an enclosing one (`visible` holds those of the enclosing blocks; this block's are
    added as they are defined and taken out again at its end)."""
    defined: list[SSAValue] = list(block.args)
    visible.update(defined)
    for op in block.ops:
        for v in op.operands:
            if v in visible:
                continue
            # A forward reference the parser never resolved (defined in another block).
            owner = None if isinstance(v, ForwardDeclaredValue) else v.owner
            where = location_of(owner) if isinstance(owner, Operation) else None
            at = f" (defined at {where})" if where is not None else ""
            raise CompileError(f"{_value_name(v)} is used before its definition{at}", op)
        for region in op.regions:
            for b in region.blocks:
                _check_definitions(b, visible)
        visible.update(op.results)
        defined.extend(op.results)
    visible.difference_update(defined)


def _check_if(op: scf.IfOp) -> None:
    if not op.results:
        return
    want = [r.type for r in op.results]
    for kind, region in (("then", op.true_region), ("else", op.false_region)):
        if not region.blocks:
            raise CompileError(f"scf.if with results needs an {kind} branch", op)
        last = region.blocks[-1].last_op
        if not isinstance(last, scf.YieldOp):
            raise CompileError(f"the {kind} branch of scf.if ends without scf.yield", op)
        got = [v.type for v in last.operands]
        if got != want:
            raise CompileError(
                f"the {kind} branch of scf.if yields {len(got)} value(s) "
                f"({', '.join(map(str, got))}); the scf.if has {len(want)} result(s) "
                f"({', '.join(map(str, want))})",
                last,
            )


def float_range_error(value: float, type_) -> str | None:
    """Why a float does not fit `type_`, or None."""
    limit = _FLOAT_MAX.get(type(type_))
    if limit is None or not math.isfinite(value) or abs(value) <= limit:
        return None
    return f"float constant {value:g} is out of range for {type_}"


def _check_constant(op: arith.ConstantOp) -> None:
    attr = op.value
    if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
        v = attr.value.data
        if not _INDEX_MIN <= v <= _INDEX_MAX:
            raise CompileError(f"index constant {v} does not fit in 64 bits", op)
    if isinstance(attr, FloatAttr):
        why = float_range_error(attr.value.data, attr.type)
        if why is not None:
            raise CompileError(why, op)


def _element_bits(t) -> int | None:
    elem = t.get_element_type() if isinstance(t, ShapedType) else t
    return getattr(elem, "bitwidth", None)


# Casts that must widen (True) or narrow (False) their element type, as in MLIR.
_WIDENING = {
    arith.ExtFOp: True,
    arith.ExtSIOp: True,
    arith.ExtUIOp: True,
    arith.TruncFOp: False,
    arith.TruncIOp: False,
}


def _check_cast(op: Operation) -> None:
    src, dst = _element_bits(op.input.type), _element_bits(op.result.type)
    if src is None or dst is None:
        return
    widen = _WIDENING[type(op)]
    if (dst > src) if widen else (dst < src):
        return
    verb = "widen" if widen else "narrow"
    raise CompileError(
        f"{op.name} must {verb} its element type, got {op.input.type} to {op.result.type}", op
    )


#: Per op class: whether its verification reads only the op itself (`_local`).
_LOCAL: dict[type[Operation], bool] = {}
#: The signatures (`_signature`) of ops that verified.
_VERIFIED: set[tuple] = set()


#: Traits whose check reads only the op's own operand and result types, or checks
#: nothing while overriding `OpTrait.verify` (xDSL's folder interface).
_LOCAL_TRAITS = (SameOperandsAndResultType, _HasFolderInterfaceTrait)


def _local_trait(trait: OpTrait) -> bool:
    """Whether `trait`'s verification reads nothing but the op's own types: it checks
    nothing (`Pure`, `Commutative`, the canonicalization pattern traits: `OpTrait.verify`
    itself), or it is one of `_LOCAL_TRAITS`."""
    return type(trait).verify is OpTrait.verify or isinstance(trait, _LOCAL_TRAITS)


def _local(cls: type[Operation]) -> bool:
    """Whether xDSL's verification of a `cls` op is a function of its own types,
    properties and attributes: an IRDL op whose traits are all local (`_local_trait`:
    others may look at the parent or the regions) and no `verify_` of its own (the
    generated verifier's `custom_verify` is `Operation.verify_`, which does nothing)."""
    if not issubclass(cls, IRDLOperation):
        return False
    if not all(_local_trait(t) for t in cls.get_irdl_definition().traits):
        return False
    cells = getattr(cls.verify_, "__closure__", None) or ()
    custom = [c.cell_contents for c in cells if callable(c.cell_contents)]
    return bool(custom) and all(f is Operation.verify_ for f in custom)


def _signature(op: Operation) -> tuple | None:
    """What the verification of `op` reads, where that is all it reads (`_local`, no
    regions or successors, not its block's last op: the terminator rules); else None."""
    cls = type(op)
    local = _LOCAL.get(cls)
    if local is None:
        local = _LOCAL[cls] = _local(cls)
    if not local or op.regions or op.successors:
        return None
    if op.parent is not None and op.parent.last_op is op:
        return None
    try:
        key = (
            cls,
            tuple(v.type for v in op.operands),
            tuple(r.type for r in op.results),
            tuple(op.properties.items()),
            tuple(op.attributes.items()),
        )
        hash(key)
    except TypeError:  # an unhashable attribute: verified each time
        return None
    return key


def verify(module: ModuleOp) -> None:
    """Verify the module, reporting the first failure at its location."""
    _check_definitions(module.body.block, set())
    for op in module.walk(reverse=True):
        key = _signature(op)
        if key is not None and key in _VERIFIED:
            if any(isinstance(v, ErasedSSAValue) for v in op.operands):
                raise CompileError("an erased value is used by the operation", op)
        else:
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as e:
                raise CompileError(verify_message(e), op) from None
            if key is not None:
                _VERIFIED.add(key)
        if isinstance(op, scf.IfOp):
            _check_if(op)
        elif isinstance(op, arith.ConstantOp):
            _check_constant(op)
        elif type(op) in _WIDENING:
            _check_cast(op)
