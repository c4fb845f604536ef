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

`_check_definitions` starts from no visible value and enters the regions of an
`IsolatedFromAbove` op (the module, `tile.kernel`) with none of the values around it, so it
also proves that trait: xDSL's check of it, which walks every nested op and each operand's
ancestors (a fifth of a verification), is left out (`_verify_op`). For the same reason no
operand is an erased value: one is never visible.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

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
from xdsl.ir import Block, Operation, OpTraits, SSAValue
from xdsl.irdl import IRDLOperation, OpDef
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.traits import IsolatedFromAbove, NoTerminator, OpTrait, SameOperandsAndResultType
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


def _check_definitions(
    block: Block, visible: set[SSAValue], hidden: frozenset[SSAValue] = frozenset()
) -> None:
    """Each operand is visible: a block argument or an earlier result of this block or
    an enclosing one (`visible` holds those of the enclosing blocks; this block's are
    added as they are defined and taken out again at its end). The regions of an
    `IsolatedFromAbove` op see none of the enclosing values (MLIR's rule: the trait);
    `hidden` holds those an isolated op around `block` hides."""
    defined: list[SSAValue] = list(block.args)
    visible.update(defined)
    for op in block.ops:
        for v in op.operands:
            if v in visible:
                continue
            if v in hidden:
                raise CompileError(
                    f"{_value_name(v)} is defined outside the IsolatedFromAbove op around its use",
                    op,
                )
            # A forward reference the parser never resolved (defined in another block).
            owner = None if isinstance(v, ForwardDeclaredValue) else v.owner
            where = location_of(owner) if isinstance(owner, Operation) else None
            at = f" (defined at {where})" if where is not None else ""
            raise CompileError(f"{_value_name(v)} is used before its definition{at}", op)
        if op.regions:
            inner, inner_hidden = visible, hidden
            if op.has_trait(IsolatedFromAbove):
                inner, inner_hidden = set(), hidden | visible
            for region in op.regions:
                for b in region.blocks:
                    _check_definitions(b, inner, inner_hidden)
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
    regions or successors, not its block's last op: the terminator rules); else None.
    It may hold an unhashable attribute (then the op is verified each time)."""
    cls = type(op)
    local = _LOCAL.get(cls)
    if local is None:
        local = _LOCAL[cls] = _local(cls)
    if not local or op.regions or op.successors:
        return None
    parent = op.parent
    if parent is not None and parent.last_op is op:
        return None
    # One flat tuple (the None between the parts: no type or property is None).
    return (
        cls,
        *[v.type for v in op.operands],
        None,
        *[r.type for r in op.results],
        None,
        *op.properties.items(),
        None,
        *op.attributes.items(),
    )


#: Per IRDL op class with the IsolatedFromAbove trait: its definition without that trait
#: and its own verifier (or None), which xDSL's generated `verify_` runs; None for other
#: classes (`_isolated`).
_ISOLATED: dict[type[Operation], tuple[OpDef, Callable[[Operation], None] | None] | None] = {}


def _isolated(cls: type[Operation]) -> tuple[OpDef, Callable[[Operation], None] | None] | None:
    """`_ISOLATED`'s entry of `cls`, made once."""
    if cls in _ISOLATED:
        return _ISOLATED[cls]
    found = None
    if issubclass(cls, IRDLOperation) and cls.has_trait(IsolatedFromAbove):
        code, cells = cls.verify_.__code__, cls.verify_.__closure__ or ()
        parts = dict(zip(code.co_freevars, (c.cell_contents for c in cells), strict=True))
        op_def = parts.get("op_def")
        if isinstance(op_def, OpDef) and set(parts) <= {"op_def", "custom_verify"}:
            kept = tuple(t for t in op_def.traits if not isinstance(t, IsolatedFromAbove))
            found = (
                dataclasses.replace(op_def, traits=OpTraits(lambda: kept)),
                parts.get("custom_verify"),
            )
    _ISOLATED[cls] = found
    return found


def _ends_block(op: Operation) -> bool:
    """Whether xDSL's terminator rules apply to `op`: the last op of a block in a
    region of several blocks, or of one block whose op may not omit its terminator."""
    block = op.parent
    if block is None or block.last_op is not op or block.parent is None:
        return False
    region = block.parent
    if len(region.blocks) > 1:
        return True
    owner = region.parent
    return owner is not None and not owner.has_trait(NoTerminator)


def _verify_op(op: Operation) -> None:
    """xDSL's verification of `op` without its regions; for an `IsolatedFromAbove` op
    without operands or successors, not bound by the terminator rules (the module,
    `tile.kernel`), its definition's checks and its own verifier without the trait's
    (`_check_definitions` proved it; module docstring)."""
    isolated = _isolated(type(op))
    if isolated is None or op.operands or op.successors or _ends_block(op):
        op.verify(verify_nested_ops=False)
        return
    op_def, custom = isolated
    op_def.verify(op)
    if custom is not None:
        custom(op)


#: Per op class: the rule of those xDSL leaves out that its ops are checked by
#: (`_check_of`), or None.
_CHECKS: dict[type[Operation], Callable[[Operation], None] | None] = {}
_unknown = object()


def _check_of(cls: type[Operation]) -> Callable[[Operation], None] | None:
    """The rule a `cls` op is checked by: `scf.if`'s results, a constant's range, a
    cast's direction; else None."""
    if issubclass(cls, scf.IfOp):
        return _check_if
    if issubclass(cls, arith.ConstantOp):
        return _check_constant
    if cls in _WIDENING:
        return _check_cast
    return None


def check_definitions(module: ModuleOp) -> None:
    """Every operand of the module defined before its use (`_check_definitions`): the
    check `verify` starts with, for a module of another dialect (TTIR) before it is read
    any further."""
    _check_definitions(module.body.block, set())


def verify(module: ModuleOp) -> None:
    """Verify the module, reporting the first failure at its location."""
    check_definitions(module)
    for op in module.walk(reverse=True):
        key = _signature(op)
        try:
            known = key is not None and key in _VERIFIED
        except TypeError:  # an unhashable attribute: verified each time
            known, key = False, None
        if not known:
            try:
                _verify_op(op)
            except VerifyException as e:
                raise CompileError(verify_message(e), op) from None
            if key is not None:
                _VERIFIED.add(key)
        check = _CHECKS.get(type(op), _unknown)
        if check is _unknown:
            check = _CHECKS[type(op)] = _check_of(type(op))
        if check is not None:
            check(op)
