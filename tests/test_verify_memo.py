"""The verifier checks an op whose verification reads only itself once per signature
(`tawac.ir.verifier._signature`); every other op, and every op of a new signature, is
verified each time. A signature is everything xDSL's verifier of such an op reads, so a
bad op never shares one with a good op."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, builtin, math, scf
from xdsl.ir import Block, Region

from tawac.dialects import ptx
from tawac.ir import verifier
from tawac.ir.verifier import _local, _signature, verify
from tawac.support.diagnostics import CompileError


def _module(*ops) -> builtin.ModuleOp:
    return builtin.ModuleOp(list(ops))


def test_which_ops_are_verified_once_per_signature():
    assert _local(ptx.AddOp)  # operand, result and property constraints only
    assert not _local(ptx.BraOp)  # a verifier of its own
    assert not _local(ptx.EntryOp)  # a trait and a region
    assert not _local(scf.ForOp)  # traits that read the regions
    # traits that check nothing (Pure, canonicalization patterns) or only the op's own
    # types (SameOperandsAndResultType, which its signature holds)
    assert _local(arith.AddfOp) and _local(arith.AddiOp) and _local(arith.CmpiOp)
    assert _local(math.Exp2Op)
    assert not _local(arith.IndexCastOp)  # a verifier of its own
    assert not _local(scf.YieldOp)  # a terminator (HasParent, IsTerminator)


def test_an_op_with_a_local_trait_that_breaks_it_is_refused_every_time(monkeypatch):
    """math.exp2 requires one type for its operand and result (a type variable and
    SameOperandsAndResultType):
    a good exp2 of f32 memoizes its signature; one whose result is f16 has another
    signature and is refused, each time."""
    monkeypatch.setattr(verifier, "_VERIFIED", set())
    one = arith.ConstantOp(builtin.FloatAttr(1.0, builtin.f32))
    good = math.Exp2Op(one.result)
    verify(_module(one, good, ptx.ExitOp()))
    assert _signature(good) in verifier._VERIFIED
    for _ in range(2):
        c = arith.ConstantOp(builtin.FloatAttr(1.0, builtin.f32))
        bad = math.Exp2Op.create(operands=[c.result], result_types=[builtin.f16])
        assert _signature(bad) != _signature(good)
        with pytest.raises(CompileError, match="does not verify"):
            verify(_module(c, bad, ptx.ExitOp()))


def _add(a, b, ty="s32"):
    return ptx.AddOp(ty, a, b)


def test_an_op_of_a_new_signature_is_verified(monkeypatch):
    monkeypatch.setattr(verifier, "_VERIFIED", set())
    a = ptx.MovImmOp("s32", 1)
    good = _add(a.result, a.result)
    verify(_module(a, good, ptx.ExitOp()))
    assert _signature(good) in verifier._VERIFIED
    # the same op with a property its constraint refuses: another signature, checked
    a2 = ptx.MovImmOp("s32", 1)
    bad = _add(a2.result, a2.result)
    bad.properties["type"] = builtin.IntAttr(3)
    assert _signature(bad) != _signature(good)
    with pytest.raises(CompileError, match="should be of base attribute string"):
        verify(_module(a2, bad, ptx.ExitOp()))


def test_a_bad_op_is_refused_every_time(monkeypatch):
    monkeypatch.setattr(verifier, "_VERIFIED", set())
    for _ in range(2):
        a = ptx.MovImmOp("s32", 1)
        bad = _add(a.result, a.result)
        bad.properties["type"] = builtin.IntAttr(3)
        with pytest.raises(CompileError):
            verify(_module(a, bad, ptx.ExitOp()))
    assert _signature(bad) not in verifier._VERIFIED


def test_the_last_op_of_a_block_is_always_verified():
    block = Block()
    op = ptx.BarSyncOp(0)
    block.add_op(op)
    Region([block])
    assert _signature(op) is None
