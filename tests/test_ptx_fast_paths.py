"""The PTX backend's fast paths build and read exactly what xDSL's generic ones do.

- `PtxInstruction.__init__` builds an op without `irdl_op_init`: the same operands (and
  use lists), result types, properties in the same order, attributes, location, regions
  and successors as `IRDLOperation.__init__` builds from the same arguments.
- The direct operand and result accessors of the PTX ops return what the accessors
  `irdl_op_definition` made return.
- `AccLayout`'s tables (`reg_offsets`, `row_offsets`, `col_offsets`, `slice_index`) are
  the formulas they memoize.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.ir import Block
from xdsl.irdl import IRDLOperation, VariadicDef
from xdsl.irdl.operations import VarIRConstruct, get_accessors_from_op_def

from tawac.dialects import ptx
from tawac.driver import compile_module, parse_text
from tawac.target.layouts import AccLayout

ROOT = Path(__file__).resolve().parent.parent

#: Kernels whose PTX holds most instruction kinds (TMA, multicast, wgmma with shared and
#: register A, fp8, softmax shuffles, split-k's atomics, bulk stores).
_KERNELS = [
    ("examples/attention.mlir", {}),
    ("examples/gemm.mlir", {"cluster": "2x1"}),
    ("examples/gemm_fp8.mlir", {"tma_store": False}),
    ("examples/gemm.mlir", {"split_k": 2}),
]


def _hand_built() -> list[ptx.PtxInstruction]:
    """The instructions the kernels above do not emit, each variadic form included."""
    b = Block(arg_types=[ptx.B32, ptx.B32, ptx.PRED, ptx.B64, ptx.F32, ptx.F32, ptx.B16])
    r, s, p, d, f, g, h = b.args
    return [
        ptx.AtomCasOp("acquire", d, r, s),
        ptx.AtomExchOp("release", d, r),
        ptx.BarArriveRegOp(r, 128),
        ptx.BarWarpSyncOp(),
        ptx.BitcastOp("b32", f),
        ptx.LdGlobalIntoOp(d, f, p),
        ptx.LdGlobalV2Op(d, f, g),
        ptx.LdGlobalV2Op(d, f, g, p),
        ptx.LdSharedOp("f32", r),
        ptx.LdSharedV2Op("f32", r),
        ptx.LdSharedV4Op("f32", r),
        ptx.Lg2Op(f),
        ptx.SqrtOp(f),
        ptx.RsqrtOp(f),
        ptx.NegOp("f32", f),
        ptx.PrefetchTensormapOp(d),
        ptx.RedGlobalAddOp(d, [f]),
        ptx.RedGlobalAddOp(d, [f, g], p),
        ptx.RedGlobalAddOp(d, [f, g, f, g]),
        ptx.StGlobalOp("b32", d, r),
        ptx.StGlobalOp("b32", d, r, p),
        ptx.StGlobalV2Op(d, f, g),
        ptx.LdGlobalV4Op(d, (f, g, f, g)),
        ptx.LdGlobalV4Op(d, (f, g, f, g), p),
        ptx.StGlobalOp("f32", d, f),
        ptx.StGlobalOp("f32", d, f, p),
        ptx.StGlobalV4B32Op(d, (r, s, r, s)),
        ptx.VoteAllOp(p),
        ptx.BraOp("L"),
        ptx.BraOp("L", p, negate=True, uni=True),
        ptx.CpAsyncBulkTensorLoadOp(r, d, s, [r, s, r]),
        ptx.CpAsyncBulkLoadOp(r, d, 8192, s),
        ptx.CpAsyncBulkLoadOp(r, d, 8192, s, d),
        ptx.CpAsyncBulkTensorLoadOp(r, d, s, [r, s], d),
        ptx.CreatePolicyOp("evict_last"),
        ptx.StGlobalOp("f32", d, f, p, d),
        ptx.StGlobalOp("f32", d, f, None, d),
        ptx.StGlobalV4B32Op(d, (r, s, r, s), p, d),
        ptx.StGlobalOp("b32", d, r, None, d),
        ptx.StGlobalV2Op(d, f, g, p, d),
        ptx.CpAsyncBulkTensorLoadMulticastOp(r, d, s, h, [r, s]),
        ptx.CpAsyncBulkTensorStoreOp(r, d, [s]),
        ptx.MovImmOp("f32", -0.0),
        ptx.MovImmOp("b64", 1 << 62),
        ptx.AddOp("f32", f, g, mode="rn"),
        ptx.MulOp("s32", r, s, mode="wide"),
        ptx.CvtOp("bf16", "f32", f, rnd="rn"),
    ]


@pytest.fixture(scope="module")
def instructions() -> list[ptx.PtxInstruction]:
    ops: list[ptx.PtxInstruction] = []
    for path, options in _KERNELS:
        result = compile_module(parse_text((ROOT / path).read_text(), path), **options)
        assert result.ir is not None
        ops += [op for op in result.ir.walk() if isinstance(op, ptx.PtxInstruction)]
    return ops + _hand_built()


def _xdsl_accessors(cls: type[IRDLOperation]) -> dict[str, object]:
    """The operand and result accessors `irdl_op_definition` makes for `cls`."""
    accessors = get_accessors_from_op_def(cls.get_irdl_definition(), None)
    constructs = (VarIRConstruct.OPERAND, VarIRConstruct.RESULT)
    return {k: v for k, v in accessors.items() if getattr(v, "construct", None) in constructs}


def test_every_instruction_kind_is_covered(instructions):
    kinds = {type(op) for op in instructions}
    every = {c for c in ptx.Ptx.operations if issubclass(c, ptx.PtxInstruction)}
    assert every - kinds == set()


def test_direct_accessors_read_what_xdsls_read(instructions):
    for op in instructions:
        for name, acc in _xdsl_accessors(type(op)).items():
            mine, theirs = getattr(op, name), acc.__get__(op)
            assert type(mine) is type(theirs), (op.name, name)
            assert mine == theirs, (op.name, name)


def test_fast_construction_builds_what_irdl_init_builds(instructions):
    for op in instructions:
        cls = type(op)
        op_def = cls.get_irdl_definition()
        accessors = _xdsl_accessors(cls)
        values = {n: accessors[n].__get__(op) for n, _ in op_def.operands}  # type: ignore[attr-defined]
        grouped = [
            list(values[n]) if isinstance(d, VariadicDef) else values[n] for n, d in op_def.operands
        ]
        twin = cls.__new__(cls)
        properties = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
        IRDLOperation.__init__(
            twin,
            operands=grouped,
            result_types=[r.type for r in op.results],
            properties=properties,
        )
        assert twin.operands == op.operands, op.name
        assert [r.type for r in twin.results] == [r.type for r in op.results]
        assert [(r.index, r.op) for r in op.results] == [(i, op) for i in range(len(op.results))]
        assert list(twin.properties.items()) == list(op.properties.items()), op.name
        assert twin.attributes == op.attributes == {}
        assert twin.location == op.location
        assert twin.regions == op.regions == ()
        assert tuple(twin.successors) == tuple(op.successors) == ()
        for i, (value, use) in enumerate(zip(op.operands, op._operand_uses, strict=True)):
            assert (use.operation, use.index) == (op, i)
            assert use in set(value.uses)
        twin.verify()
        op.verify()


def test_an_unknown_register_class_still_fails_verification():
    with pytest.raises(Exception, match="unknown PTX register class"):
        ptx.DeclareRegOp("b8")


@pytest.mark.parametrize(
    "m,n,wgs",
    [(64, 8, 1), (64, 64, 1), (128, 128, 1), (128, 256, 2), (192, 96, 1), (256, 128, 2)],
)
def test_layout_tables_are_their_formulas(m, n, wgs):
    layout = AccLayout(m, n, wgs)
    offsets = []
    for i in range(layout.num_regs):
        mi, j = divmod(i, layout.regs_per_block)
        offsets.append((64 * mi + 8 * ((j >> 1) & 1), 8 * (j >> 2) + (j & 1)))
    assert list(layout.reg_offsets()) == offsets
    assert [layout.reg_offset(i) for i in range(layout.num_regs)] == offsets
    rows = sorted({r for r, _ in offsets})
    cols = sorted({c for _, c in offsets})
    assert layout.row_offsets() == rows and layout.col_offsets() == cols
    for i, (r, c) in enumerate(offsets):
        assert layout.slice_index(0, i) == rows.index(r)
        assert layout.slice_index(1, i) == cols.index(c)
    # the lists handed out are the caller's own
    layout.row_offsets().append(-1)
    assert layout.row_offsets() == rows
