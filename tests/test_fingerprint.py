"""`tawac.ir.fingerprint`: two modules with one fingerprint print alike (names included),
two with one key print alike once their values are unnamed; every kind of change that
printing shows changes the fingerprint."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr

from tawac.check import tile_pipeline
from tawac.check.variants import variants
from tawac.compiler import parse_file, parse_text, run_pipeline
from tawac.ir.fingerprint import _text, fingerprint, key

REPO = Path(__file__).resolve().parent.parent
ATTENTION = REPO / "examples" / "attention.mlir"


def _first(module, cls):
    return next(o for o in module.walk() if isinstance(o, cls))


def test_a_clone_and_the_text_parsed_back_have_the_fingerprint():
    module = parse_file(ATTENTION)
    assert fingerprint(module.clone()) == fingerprint(module)
    again = parse_text(str(module), "again.mlir")
    assert fingerprint(again) == fingerprint(module)
    assert key(again) == key(module)
    hash(key(module))  # a set of checked programs holds it


def test_a_name_counts_only_with_names():
    module = parse_file(ATTENTION)
    renamed = module.clone()
    op = _first(renamed, arith.MulfOp)
    op.result.name_hint = "renamed"
    assert fingerprint(renamed) != fingerprint(module)
    assert key(renamed) == key(module)


def _change_constant(m):
    """A dense float constant's value: 0.0 to -0.0 (equal as floats, not as bits)."""
    c = next(
        o
        for o in m.walk()
        if isinstance(o, arith.ConstantOp)
        and isinstance(o.value, DenseIntOrFPElementsAttr)
        and o.value.get_values()[0] == 0.0
    )
    c.value = DenseIntOrFPElementsAttr.from_list(c.value.type, [-0.0])


def _swap_operands(m):
    op = _first(m, arith.SubfOp)
    a, b = op.operands
    op.operands = [b, a]


def _move_op(m):
    """The first two ops of the kernel swapped (two constants: the same program)."""
    kernel = next(o for o in m.walk() if o.name == "tile.kernel")
    first = kernel.body.block.first_op
    second = first.next_op
    second.detach()
    kernel.body.block.insert_op_before(second, first)


def _change_property(m):
    """A comparison's predicate: sgt to sge."""
    op = _first(m, arith.CmpiOp)
    op.predicate = IntegerAttr(op.predicate.value.data + 1, op.predicate.type)


@pytest.mark.parametrize("change", [_change_constant, _swap_operands, _move_op, _change_property])
def test_every_printed_change_changes_the_fingerprint(change):
    module = parse_file(ATTENTION)
    changed = module.clone()
    change(changed)
    assert str(changed) != str(module)
    assert fingerprint(changed) != fingerprint(module)
    assert key(changed) != key(module)


@pytest.mark.parametrize("name", ["attention.mlir", "gemm.mlir", "softmax.mlir"])
def test_one_key_means_one_unnamed_text(name):
    """Over spellings of a program, before and after the tile-level passes: two modules
    have one key exactly where they print alike once unnamed."""
    original = parse_file(REPO / "examples" / name)
    modules = [original]
    for module, _ in variants(original, 6, seed=5):
        spelled = parse_text(str(module), "v.mlir")
        modules.append(spelled.clone())
        run_pipeline(spelled, ",".join(tile_pipeline()))
        modules.append(spelled)
    keys = [key(m) for m in modules]
    texts = [_text(m, names=False) for m in modules]
    same = 0
    for i, j in itertools.combinations(range(len(modules)), 2):
        assert (keys[i] == keys[j]) == (texts[i] == texts[j]), (name, i, j)
        same += keys[i] == keys[j]
    assert same > 0  # some spellings meet again after the passes (the test can tell)
