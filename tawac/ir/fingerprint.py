"""A module's structure as one comparable value: `fingerprint(a) == fingerprint(b)` where
the two print alike, at a small share of the cost of printing them.

The fingerprint holds, op by op in order: the op's class, its operands as the numbers of
the values they use (values are numbered in the order they are defined, block arguments
and results alike, so it does not depend on names or identities), its result types, its
properties and attributes (xDSL compares attributes by their data: a float by its bits, a
dense constant by its bytes), its successors and regions (each block's argument types and
ops), and, with `names`, the name of every value; without it, only the names of the
arguments of each `tile.kernel` (inputs are bound by them). Anything that printing shows
is in it, so two modules with one fingerprint print alike (up to value names, without
`names`); it may tell apart modules that print alike (two attributes that are not equal
but print the same), which only costs a check that could have been skipped.

It is hashable where every attribute is (`key`: a set of checked programs keys by it).
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue

from tawac.dialects import tile


def _number(op: Operation) -> tuple[dict[SSAValue, int], dict[Block, int]]:
    """Every value and block under `op`, numbered in walk order."""
    values: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    for o in op.walk():
        for region in o.regions:
            for block in region.blocks:
                blocks[block] = len(blocks)
                for a in block.args:
                    values[a] = len(values)
        for r in o.results:
            values[r] = len(values)
    return values, blocks


def fingerprint(op: Operation, *, names: bool = True) -> tuple:
    """`op`'s structure (the module docstring); `names`: whether value names count."""
    values, blocks = _number(op)

    def use(v: SSAValue) -> object:
        n = values.get(v)
        return n if n is not None else ("outside", id(v))

    def visit(o: Operation) -> tuple:
        regions = []
        for region in o.regions:
            bs = []
            for block in region.blocks:
                keep = names or isinstance(o, tile.KernelOp)
                args = tuple((a.type, a.name_hint if keep else None) for a in block.args)
                bs.append((args, tuple(visit(inner) for inner in block.ops)))
            regions.append(tuple(bs))
        return (
            type(o),
            o.name,
            tuple(use(v) for v in o.operands),
            tuple((r.type, r.name_hint) if names else r.type for r in o.results),
            tuple(o.properties.items()),
            tuple(o.attributes.items()),
            tuple(blocks.get(s, -1) for s in o.successors),
            tuple(regions),
        )

    return visit(op)


def key(op: Operation, *, names: bool = False) -> object:
    """A hashable key of `op`'s structure: its fingerprint (without names unless asked),
    or where an attribute is not hashable, the text `op` prints (its values unnamed but
    the kernels' arguments, unless `names`)."""
    fp = fingerprint(op, names=names)
    try:
        hash(fp)
    except TypeError:
        return _text(op, names)
    return fp


def _text(op: Operation, names: bool) -> str:
    if names:
        return str(op)
    clone = op.clone()
    for o in clone.walk():
        for r in o.results:
            r.name_hint = None
        if isinstance(o, tile.KernelOp):
            continue
        for region in o.regions:
            for block in region.blocks:
                for a in block.args:
                    a.name_hint = None
    return str(clone)
