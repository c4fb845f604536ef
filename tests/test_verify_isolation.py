"""The verifier checks `IsolatedFromAbove` itself, where it checks that every value is
defined before its use (`tawac.ir.verifier._check_definitions`): xDSL's own check of the
trait is left out of an isolated op's verification, and everything else of it is kept."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, builtin
from xdsl.ir import Block, ErasedSSAValue, Region

from tawac.dialects import tile
from tawac.ir.verifier import verify
from tawac.support.diagnostics import CompileError


def _constant() -> arith.ConstantOp:
    return arith.ConstantOp(builtin.IntegerAttr(1, builtin.i32))


def test_a_value_from_outside_an_isolated_op_is_refused():
    c = _constant()
    inner = builtin.ModuleOp([arith.AddiOp(c.result, c.result)])
    with pytest.raises(CompileError, match="defined outside the IsolatedFromAbove op"):
        verify(builtin.ModuleOp([c, inner]))


def test_the_values_around_an_isolated_op_are_visible_again_after_it():
    c, d = _constant(), _constant()
    inner = builtin.ModuleOp([d, arith.AddiOp(d.result, d.result)])
    verify(builtin.ModuleOp([c, inner, arith.AddiOp(c.result, c.result)]))


def test_the_rest_of_an_isolated_ops_verification_is_kept():
    # the module's SymbolTable trait
    twice = [builtin.ModuleOp([], sym_name=builtin.StringAttr("m")) for _ in range(2)]
    with pytest.raises(CompileError, match='Redefinition of symbol "m"'):
        verify(builtin.ModuleOp(twice))
    # its definition's properties
    odd = builtin.ModuleOp([])
    odd.properties["odd"] = builtin.UnitAttr()
    with pytest.raises(CompileError, match="property 'odd' is not defined"):
        verify(odd)
    # tile.kernel's own verifier (it ends in tile.return), each time
    for _ in range(2):
        kernel = tile.KernelOp("k", [], Region(Block([_constant()])))
        with pytest.raises(CompileError, match="tile.kernel"):
            verify(builtin.ModuleOp([kernel]))


def test_an_erased_value_is_refused():
    c = _constant()
    add = arith.AddiOp(c.result, c.result)
    add.operands = [ErasedSSAValue(builtin.i32, c.result), c.result]
    with pytest.raises(CompileError, match="used before its definition"):
        verify(builtin.ModuleOp([c, add]))
