"""`guard-masks`: the scalar "some element is false" it builds for each form of mask
agrees with the mask itself (exhaustively over small offsets, sizes and extents), and
the guarded attention programs compute exactly what the unguarded ones do."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from programs import hoisted_mask
from xdsl.dialects import arith, scf
from xdsl.ir import SSAValue

from tawac.compiler import parse_file, parse_text
from tawac.dialects import tile
from tawac.ir.context import make_context
from tawac.passes.guard_masks import GuardMasksPass, guard_kernel

DATA = Path(__file__).parent / "data" / "triton"
_CMP = {
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
}


def _program(lhs: str, rhs: str, pred: str, rows: int, cols: int) -> str:
    """A loop with one select on `tile.cmpi pred, lhs, rhs` (lhs, rhs: "row", "col",
    "n"), the offsets and n the constants of `_eval`."""
    t = f"tensor<{rows}x{cols}xi32>"
    vals = {
        "row": f"%row = tile.iota 0, %r0 : {t}",
        "col": f"%col = tile.iota 1, %c0 : {t}",
        "n": f"%n = tile.splat %nn : index -> {t}",
    }
    body = "\n".join(vals[v] for v in dict.fromkeys((lhs, rhs)))
    f = f"tensor<{rows}x{cols}xf32>"
    return f"""
tile.kernel @k(%x: !tile.tensor<?x?xbf16, ["M", "N"]>) {{
  %r0 = arith.constant 0 : index
  %c0 = arith.constant 0 : index
  %nn = arith.constant 0 : index
  %lo = arith.constant 0 : index
  %one = arith.constant 1 : index
  scf.for %i = %lo to %one step %one {{
    {body}
    %m = tile.cmpi {pred}, %{lhs}, %{rhs} : {t}
    %a = arith.constant dense<1.0> : {f}
    %b = arith.constant dense<0.0> : {f}
    %s = tile.select %m, %a, %b : tensor<{rows}x{cols}xi1>, {f}
    scf.yield
  }}
  tile.return
}}
"""


def _eval(v: SSAValue, env: dict[str, int]) -> int:
    """The value of a scalar built from the named constants (`env`), `arith.addi` and
    `arith.cmpi`."""
    op = v.owner
    if isinstance(op, arith.ConstantOp):
        name = v.name_hint
        return env[name] if name in env else op.value.value.data
    if isinstance(op, arith.AddiOp):
        return _eval(op.lhs, env) + _eval(op.rhs, env)
    assert isinstance(op, arith.CmpiOp), op
    pred = ["eq", "ne", "slt", "sle", "sgt", "sge"][op.predicate.value.data]
    return int(_CMP[pred](_eval(op.lhs, env), _eval(op.rhs, env)))


FORMS = [
    (lhs, rhs, pred)
    for pred in _CMP
    for lhs, rhs in (("col", "n"), ("n", "col"), ("row", "n"), ("row", "col"), ("col", "row"))
]


@pytest.mark.parametrize(("lhs", "rhs", "pred"), FORMS)
def test_some_false_agrees_with_the_mask(lhs, rhs, pred):
    rows, cols = 3, 4
    kern = next(
        o
        for o in parse_text(_program(lhs, rhs, pred, rows, cols), "m.mlir").walk()
        if isinstance(o, tile.KernelOp)
    )
    assert guard_kernel(kern) == 1
    (branch,) = [o for o in kern.walk() if isinstance(o, scf.IfOp)]
    assert not [o for o in branch.parent_block().ops if isinstance(o, tile.CmpiOp)]
    for r0, c0, n in itertools.product(range(0, 9), range(0, 9), range(0, 12)):
        env = {"r0": r0, "c0": c0, "nn": n}
        every = all(
            _CMP[pred](*({"row": r0 + i, "col": c0 + j, "n": n}[s] for s in (lhs, rhs)))
            for i in range(rows)
            for j in range(cols)
        )
        assert _eval(branch.cond, env) == (not every), env


def test_other_masks_are_left_alone():
    text = _program("col", "n", "slt", 4, 4).replace("tile.cmpi slt", "tile.cmpi eq")
    kern = next(o for o in parse_text(text, "m.mlir").walk() if isinstance(o, tile.KernelOp))
    assert guard_kernel(kern) == 0


@pytest.mark.parametrize(
    ("name", "guards"), [("unseen_attention", 1), ("unseen_attention_causal", 2)]
)
@pytest.mark.parametrize("seqlen", [128, 300])
def test_guarded_attention_is_exact(name, guards, seqlen):
    """The Triton attention's key (and causal) masks, guarded, give bit for bit what the
    masks on every block give, at a whole and a ragged length."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    def kernel():
        return next(
            o for o in parse_file(DATA / f"{name}.ttir").walk() if isinstance(o, tile.KernelOp)
        )

    plain, guarded = kernel(), kernel()
    assert guard_kernel(guarded) == guards
    g = torch.Generator().manual_seed(seqlen)
    q, k, v = (torch.randn(1, 4, seqlen, 128, generator=g).bfloat16() for _ in range(3))
    outs = []
    for kern in (plain, guarded):
        o = torch.full_like(q, float("nan"))
        interpret(kern, [q, k, v, o, 1 / math.sqrt(128)], (math.ceil(seqlen / 128), 4, 1))
        outs.append(o)
    assert not torch.isnan(outs[0].float()).any()
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("seqlen", [256, 384])
def test_guarded_tutorial_causal_attention_is_exact(seqlen):
    """Triton's tutorial causal attention (`qk * scale + tl.where(mask, 0, -1.0e6)` in its
    diagonal loop): with the add moved into both branches of the guard, O and M are bit
    for bit those of the unguarded program."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    source = Path(__file__).parents[1] / "examples" / "triton" / "attention_causal.ttir"

    def kernel():
        return next(o for o in parse_file(source).walk() if isinstance(o, tile.KernelOp))

    plain, guarded = kernel(), kernel()
    assert guard_kernel(guarded) == 1
    (guarded_if,) = [o for o in guarded.walk() if isinstance(o, scf.IfOp)]
    assert [type(o) for o in guarded_if.false_region.block.ops] == [arith.AddfOp, scf.YieldOp]
    g = torch.Generator().manual_seed(seqlen)
    q, k, v = (torch.randn(1, 2, seqlen, 128, generator=g).half() for _ in range(3))
    outs = []
    for kern in (plain, guarded):
        o = torch.full_like(q, float("nan"))
        m = torch.full((2, 4096), float("nan"))  # rows of the compiled-in N_CTX per head
        interpret(kern, [q, k, v, 1 / math.sqrt(128), m.view(-1), o], (seqlen // 128, 2, 1))
        outs.append((o, m[:, :seqlen]))
    assert not torch.isnan(outs[0][0].float()).any() and not torch.isnan(outs[0][1]).any()
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


def _kernel_of(module) -> tile.KernelOp:
    (kern,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    return kern


@pytest.mark.parametrize(
    ("name", "hoisted"), [("attention.mlir", tile.SplatOp), ("attention_causal.mlir", tile.IotaOp)]
)
def test_hoisted_mask_operands_are_read_from_outside_the_loop(name, hoisted):
    """The splat / row iota defined before the key loop stays there, read from inside the
    guard: only the ops of the select's own block (the column iota, the compare) move
    into the `then`. A second run changes nothing."""
    module = parse_text(hoisted_mask(name), name)
    kern = _kernel_of(module)
    (outside,) = [o for o in kern.body.block.ops if isinstance(o, hoisted)][-1:]
    assert guard_kernel(kern) == 1
    (loop,) = [o for o in kern.walk() if isinstance(o, scf.ForOp)]
    (branch,) = [o for o in kern.walk() if isinstance(o, scf.IfOp)]
    assert branch.parent_op() is loop
    then = list(branch.true_region.block.ops)
    assert [type(o) for o in then] == [tile.IotaOp, tile.CmpiOp, tile.SelectOp, scf.YieldOp]
    assert outside.parent_block() is kern.body.block
    assert outside.results[0] in then[1].operands
    module.verify()
    before = str(module)
    assert guard_kernel(kern) == 0
    assert str(module) == before


@pytest.mark.parametrize("name", ["attention.mlir", "attention_causal.mlir"])
def test_hoisted_mask_compiles(name):
    """The default pipeline (guard-masks on) compiles the hoisted programs to PTX."""
    from tawac.compiler import compile_module

    result = compile_module(parse_text(hoisted_mask(name), name))
    assert ".entry" in result.ptx and "setp" in result.ptx


@pytest.mark.parametrize("name", ["attention.mlir", "attention_causal.mlir"])
def test_hoisted_mask_guarded_computes_the_same(name):
    """The hoisted programs, before and after `guard-masks`, on the interpreter at a
    ragged length (333 keys: the last key block and the diagonal blocks masked): the
    same output, bit for bit."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    plain = parse_text(hoisted_mask(name), name)
    guarded = parse_text(hoisted_mask(name), name)
    GuardMasksPass().apply(make_context(), guarded)
    assert [o for o in guarded.walk() if isinstance(o, scf.IfOp)]
    g = torch.Generator().manual_seed(333)
    q, k, v = (torch.randn(1, 2, 333, 128, generator=g).bfloat16() for _ in range(3))
    outs = []
    for module in (plain, guarded):
        o = torch.full_like(q, float("nan"))
        interpret(_kernel_of(module), [q, k, v, o, 1.4427 / math.sqrt(128)], (3, 2, 1))
        outs.append(o)
    assert not torch.isnan(outs[0].float()).any()
    assert torch.equal(outs[0], outs[1])


#: A mask computed wholly before the loop (compare included): a key window of 128
#: columns against the row length, applied to every iteration's tile; the select's one
#: user, the accumulating add, is sunk into both branches.
_HOISTED_COMPARE = """
tile.kernel @k(%x: !tile.tensor<?x?xf32, ["M", "N"]>, %o: !tile.tensor<?x?xf32, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c64 : index
  %n = tile.dim %x[1] : !tile.tensor<?x?xf32, ["M", "N"]>
  %cols = tile.iota 1, %c0 : tensor<64x128xi32>
  %limit = tile.splat %n : index -> tensor<64x128xi32>
  %inside = tile.cmpi PRED, %cols, %limit : tensor<64x128xi32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x128xf32>
  %one = arith.constant dense<1.000000e+00> : tensor<64x128xf32>
  %acc = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %zero) -> (tensor<64x128xf32>) {
    %t = tile.load %x[%m0, %c0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<64x128xf32>
    %t1 = arith.addf %t, %one : tensor<64x128xf32>
    %s = tile.select %inside, %t1, %zero : tensor<64x128xi1>, tensor<64x128xf32>
    %a2 = arith.addf %a, %s : tensor<64x128xf32>
    scf.yield %a2 : tensor<64x128xf32>
  }
  tile.store %acc, %o[%m0, %c0] : tensor<64x128xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
"""


@pytest.mark.parametrize("pred", ["slt", "sge"])
@pytest.mark.parametrize("cols", [100, 128, 200])
def test_hoisted_compare_is_guarded_in_place(pred, cols):
    """A compare (and its iota and splat) before the loop is loop-invariant: it stays
    where it is, the guard reads it, and the loop computes what it did (a window of 128
    columns against 100, 128, 200: some, none, no element false)."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    text = _HOISTED_COMPARE.replace("PRED", pred)
    plain, guarded = (_kernel_of(parse_text(text, "m.mlir")) for _ in range(2))
    assert guard_kernel(guarded) == 1
    (branch,) = [o for o in guarded.walk() if isinstance(o, scf.IfOp)]
    assert [type(o) for o in branch.true_region.block.ops] == [
        tile.SelectOp,
        arith.AddfOp,
        scf.YieldOp,
    ]
    assert any(isinstance(o, tile.CmpiOp) for o in guarded.body.block.ops)
    guarded.verify()
    g = torch.Generator().manual_seed(cols)
    x = torch.randn(100, cols, generator=g)
    outs = []
    for kern in (plain, guarded):
        o = torch.full((100, cols), float("nan"))
        interpret(kern, [x, o], (2, 1, 1))
        outs.append(o[:, :128])  # the window
    assert not torch.isnan(outs[0]).any()
    assert torch.equal(outs[0], outs[1])
