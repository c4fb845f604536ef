"""Equivalent spellings of a tile program (equivalence modulo inputs, metamorphic testing).

A pass that pattern-matches the IR sees the program as its author wrote it; users write
the same program other ways (an invariant hoisted out of the loop, an index computed as a
shift, a compare mirrored). `variant` applies a few random semantics-preserving rewrites
to a copy of a module; every variant must compile (or be refused with a located error)
and compute what the original computes (`tawac.check.validate`). The rewrites (`REWRITES`):

- `hoist`: a pure op in a loop body or an `scf.if` branch whose operands are all defined
  outside it moves before the loop (the branch); `sink`: a pure op whose uses are all in
  one loop body or branch moves into it, before its first use (a splat across a loop
  boundary either way);
- `reorder`: two neighbouring ops that do not depend on each other swap (not two that
  touch memory, where one writes);
- `split-constant`: an integer constant c becomes (c - k) + k; `factor`: `x * c` becomes
  `(x * a) * b` with a b = c; `shift`: `x * 2^k` becomes `x << k`;
- `uncse`: one use of a pure op reads a copy of it instead; `cse`: identical pure ops
  merged (xDSL's CSE);
- `commute`: the operands of a commutative op swap; `mirror`: a compare is written the
  other way round (`a < b` as `b > a`);
- `rename`: the values get other names.

Dots, loads, stores and ops with regions are never moved or copied. Each rewrite takes a
random site among all the places it applies; a variant records the rewrites it applied.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.transforms.common_subexpression_elimination import cse

from tawac.analysis.scalars import constant_int
from tawac.check.validate import kernel_of
from tawac.dialects import tile
from tawac.passes.canonicalize import COMMUTATIVE_INT

#: Ops with memory effects that only read.
_READS = (tile.LoadOp, tile.LoadIndexOp, tile.DimOp)
#: Predicates with their operands swapped (arith.cmpi's names and tile.cmpi's).
_MIRROR = {
    "eq": "eq",
    "ne": "ne",
    "slt": "sgt",
    "sle": "sge",
    "sgt": "slt",
    "sge": "sle",
    "ult": "ugt",
    "ule": "uge",
    "ugt": "ult",
    "uge": "ule",
}
_CMPI_NAMES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_COMMUTATIVE = (
    *COMMUTATIVE_INT,
    arith.AddfOp,
    arith.MulfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
)


def movable(op: Operation) -> bool:
    """A pure op without regions that is cheap to move or copy (no MMA)."""
    return (
        not op.regions
        and not isinstance(op, tile.DotOp | scf.YieldOp | tile.ReturnOp)
        and is_side_effect_free(op)
    )


def _ops(kernel: tile.KernelOp) -> list[Operation]:
    return [op for op in kernel.walk() if op is not kernel]


def _defined_in(v: SSAValue, op: Operation) -> bool:
    """Whether `v` is defined inside `op`'s regions."""
    owner = v.owner
    block = owner if isinstance(owner, Block) else owner.parent_block()
    while block is not None:
        parent = block.parent_op()
        if parent is op:
            return True
        block = parent.parent_block() if parent is not None else None
    return False


# ---- rewrites: each returns the sites where it applies and applies itself to one


@dataclass
class Rewrite:
    sites: Callable[[tile.KernelOp], list]
    apply: Callable[[random.Random, object], None]


def _hoist_sites(kernel: tile.KernelOp) -> list[Operation]:
    out = []
    for op in _ops(kernel):
        parent = op.parent_op()
        if not isinstance(parent, scf.ForOp | scf.IfOp) or not movable(op):
            continue
        if all(not _defined_in(v, parent) for v in op.operands):
            out.append(op)
    return out


def _hoist(rng: random.Random, op: Operation) -> None:
    parent = op.parent_op()
    assert parent is not None
    op.detach()
    Rewriter.insert_op(op, InsertPoint.before(parent))


def _user_in(use_op: Operation, block: Block) -> Operation | None:
    """The op of `block` that holds `use_op` (itself or an ancestor), else None."""
    while use_op is not None:
        if use_op.parent_block() is block:
            return use_op
        use_op = use_op.parent_op()
    return None


def _sink_sites(kernel: tile.KernelOp) -> list[tuple[Operation, Block]]:
    out = []
    for op in _ops(kernel):
        if not movable(op) or not any(r.uses for r in op.results):
            continue
        users = [u.operation for r in op.results for u in r.uses]
        for target in {u.parent_op() for u in users}:
            if not isinstance(target, scf.ForOp | scf.IfOp) or target.parent_block() is not (
                op.parent_block()
            ):
                continue
            for region in target.regions:
                for block in region.blocks:
                    if all(_user_in(u, block) is not None for u in users):
                        out.append((op, block))
    return out


def _sink(rng: random.Random, site: tuple[Operation, Block]) -> None:
    op, block = site
    users = [_user_in(u.operation, block) for r in op.results for u in r.uses]
    first = min(users, key=block.get_operation_index)
    op.detach()
    Rewriter.insert_op(op, InsertPoint.before(first))


def _effects(op: Operation) -> str:
    """'pure', 'read' or 'write' (any op with regions holding a non-pure op: 'write')."""
    if isinstance(op, _READS):
        return "read"
    if op.regions:
        inner = [_effects(o) for r in op.regions for b in r.blocks for o in b.ops]
        return "write" if "write" in inner else ("read" if "read" in inner else "pure")
    return "pure" if is_side_effect_free(op) else "write"


def _reorder_sites(kernel: tile.KernelOp) -> list[Operation]:
    out = []
    for a in _ops(kernel):
        b = a.next_op
        if b is None or isinstance(b, scf.YieldOp | tile.ReturnOp):
            continue
        if any(v.owner is a for o in b.walk() for v in o.operands):
            continue
        ea, eb = _effects(a), _effects(b)
        if "write" in (ea, eb) and "pure" not in (ea, eb):
            continue
        out.append(a)
    return out


def _reorder(rng: random.Random, a: Operation) -> None:
    b = a.next_op
    assert b is not None
    b.detach()
    Rewriter.insert_op(b, InsertPoint.before(a))


def _int_constants(kernel: tile.KernelOp) -> list[arith.ConstantOp]:
    return [
        op
        for op in _ops(kernel)
        if isinstance(op, arith.ConstantOp)
        and isinstance(op.result.type, IndexType | IntegerType)
        and not (isinstance(op.result.type, IntegerType) and op.result.type.width.data == 1)
        and op.result.uses
    ]


def _split_constant(rng: random.Random, op: arith.ConstantOp) -> None:
    c = constant_int(op.result)
    assert c is not None
    k = rng.randint(1, 16)
    t = op.result.type
    lo = arith.ConstantOp(IntegerAttr(c - k, t))
    hi = arith.ConstantOp(IntegerAttr(k, t))
    add = arith.AddiOp(lo.result, hi.result)
    use = rng.choice(list(op.result.uses))
    Rewriter.insert_op([lo, hi, add], InsertPoint.before(use.operation))
    use.operation.operands[use.index] = add.result


def _scaled_sites(kernel: tile.KernelOp, power_of_two: bool) -> list[arith.MuliOp]:
    out = []
    for op in _ops(kernel):
        if not isinstance(op, arith.MuliOp) or not isinstance(op.result.type, IndexType):
            continue
        c = constant_int(op.rhs)
        if c is None or c < 2:
            continue
        if power_of_two and c & (c - 1):
            continue
        if not power_of_two and not any(c % a == 0 for a in range(2, c)):
            continue
        out.append(op)
    return out


def _factor(rng: random.Random, op: arith.MuliOp) -> None:
    c = constant_int(op.rhs)
    assert c is not None
    a = rng.choice([d for d in range(2, c) if c % d == 0])
    t = op.result.type
    ca, cb = arith.ConstantOp(IntegerAttr(a, t)), arith.ConstantOp(IntegerAttr(c // a, t))
    inner = arith.MuliOp(op.lhs, ca.result)
    outer = arith.MuliOp(inner.result, cb.result)
    Rewriter.replace_op(op, [ca, cb, inner, outer])


def _shift(rng: random.Random, op: arith.MuliOp) -> None:
    c = constant_int(op.rhs)
    assert c is not None
    k = arith.ConstantOp(IntegerAttr(c.bit_length() - 1, op.result.type))
    Rewriter.replace_op(op, [k, arith.ShLIOp(op.lhs, k.result)])


def _uncse_sites(kernel: tile.KernelOp) -> list[Operation]:
    return [
        op
        for op in _ops(kernel)
        if movable(op) and len(op.results) == 1 and len(list(op.results[0].uses)) >= 2
    ]


def _uncse(rng: random.Random, op: Operation) -> None:
    use = rng.choice(sorted(op.results[0].uses, key=lambda u: (id(u.operation), u.index)))
    copy = op.clone()
    Rewriter.insert_op(copy, InsertPoint.after(op))
    use.operation.operands[use.index] = copy.results[0]


def _commute_sites(kernel: tile.KernelOp) -> list[Operation]:
    return [
        op
        for op in _ops(kernel)
        if isinstance(op, _COMMUTATIVE) and op.operands[0] is not op.operands[1]
    ]


def _commute(rng: random.Random, op: Operation) -> None:
    a, b = op.operands
    op.operands = [b, a]


def _mirror_sites(kernel: tile.KernelOp) -> list[Operation]:
    return [op for op in _ops(kernel) if isinstance(op, arith.CmpiOp | tile.CmpiOp)]


def _mirror(rng: random.Random, op: Operation) -> None:
    if isinstance(op, arith.CmpiOp):
        pred = _MIRROR[_CMPI_NAMES[op.predicate.value.data]]
        new: Operation = arith.CmpiOp(op.rhs, op.lhs, pred)
    else:
        assert isinstance(op, tile.CmpiOp)
        new = tile.CmpiOp(_MIRROR[op.predicate.data], op.rhs, op.lhs)
    new.location = op.location
    Rewriter.replace_op(op, new)


def _rename(rng: random.Random, kernel: tile.KernelOp) -> None:
    for op in _ops(kernel):
        for r in op.results:
            r.name_hint = f"v{rng.randrange(10**6)}"
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    a.name_hint = f"a{rng.randrange(10**6)}"


def _cse_sites(kernel: tile.KernelOp) -> list[tile.KernelOp]:
    return [kernel]


def _cse(rng: random.Random, kernel: tile.KernelOp) -> None:
    cse(kernel)


REWRITES: dict[str, Rewrite] = {
    "hoist": Rewrite(_hoist_sites, _hoist),
    "sink": Rewrite(_sink_sites, _sink),
    "reorder": Rewrite(_reorder_sites, _reorder),
    "split-constant": Rewrite(_int_constants, _split_constant),
    "factor": Rewrite(lambda k: _scaled_sites(k, False), _factor),
    "shift": Rewrite(lambda k: _scaled_sites(k, True), _shift),
    "uncse": Rewrite(_uncse_sites, _uncse),
    "cse": Rewrite(_cse_sites, _cse),
    "commute": Rewrite(_commute_sites, _commute),
    "mirror": Rewrite(_mirror_sites, _mirror),
    "rename": Rewrite(lambda k: [k], _rename),
}


def variant(
    module: ModuleOp, seed: int, steps: int = 3, kinds: tuple[str, ...] | None = None
) -> tuple[ModuleOp, list[str]]:
    """A copy of `module` with `steps` random rewrites of `kinds` (all by default)
    applied, and their names (a rewrite that applies nowhere is skipped)."""
    rng = random.Random(seed)
    out = module.clone()
    kernel = kernel_of(out)
    applied: list[str] = []
    names = list(kinds or REWRITES)
    for _ in range(steps):
        rng.shuffle(names)
        for name in names:
            sites = REWRITES[name].sites(kernel)
            if not sites:
                continue
            REWRITES[name].apply(rng, rng.choice(sites))
            applied.append(name)
            break
    return out, applied


def variants(
    module: ModuleOp, count: int, seed: int = 0, steps: int = 3
) -> list[tuple[ModuleOp, list[str]]]:
    """`count` variants of `module` whose printed text differs from the original's and
    from each other's (up to 4 * count tries)."""
    seen = {str(module)}
    out: list[tuple[ModuleOp, list[str]]] = []
    for i in range(4 * count):
        m, applied = variant(module, seed * 7919 + i, steps)
        text = str(m)
        if text in seen:
            continue
        seen.add(text)
        out.append((m, applied))
        if len(out) == count:
            break
    return out


__all__ = ["REWRITES", "Rewrite", "movable", "variant", "variants"]
