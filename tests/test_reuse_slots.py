"""`reuse-slots`'s chain (`tawac.analysis.arefs.rereads`) and the planner's decision
(`plan_resident`): an aref is resident only where its later loops load the very tiles of
its first at the same iterations; any other program keeps a ring per loop, and a plan
that says otherwise is refused. The rewrite itself: tests/filecheck/passes/reuse-slots.mlir;
on the GPU: tests/test_norm_examples.py."""

from __future__ import annotations

import re

import pytest

from tawac.analysis.arefs import Rereads, rereads
from tawac.compiler import make_context, make_pipeline, parse_text
from tawac.dialects import aref
from tawac.support.options import PipelineOptions
from tawac.tools.explain import explain_module

T = '!tile.tensor<?x?xbf16, ["M", "N"]>'
KERNEL = """tile.kernel @k(%x: TT, %z: TT, %y: TT) {
  %c0 = arith.constant 0 : index
  %bm = arith.constant 16 : index
  %bn = arith.constant 256 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %N = tile.dim %x[1] : !tile.tensor<?x?xbf16, ["M", "N"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<16xf32>
  %ss = scf.for %n = %c0 to %N step %bn iter_args(%acc = %zero) -> (tensor<16xf32>) {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>
    %xf = arith.extf %xt : tensor<16x256xbf16> to tensor<16x256xf32>
    %s = tile.reduce sum %xf, 1 : tensor<16x256xf32> -> tensor<16xf32>
    %a = arith.addf %acc, %s : tensor<16xf32>
    scf.yield %a : tensor<16xf32>
  }
  %sb = tile.broadcast %ss, 0 : tensor<16xf32> -> tensor<16x256xf32>
  LOOP2
    %xf = arith.extf %xt : tensor<16x256xbf16> to tensor<16x256xf32>
    %o = arith.divf %xf, %sb : tensor<16x256xf32>
    %o16 = arith.truncf %o : tensor<16x256xf32> to tensor<16x256xbf16>
    tile.store %o16, %y[%m0, %n] : tensor<16x256xbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  }
  tile.return
}""".replace("TT", T)

SAME = """scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>"""

#: Second loops that do not re-read the first loop's tiles, and what `rereads` says.
OTHERS = {
    "shifted": (
        """scf.for %n = %c0 to %N step %bn {
    %c1 = arith.constant 256 : index
    %n1 = arith.addi %n, %c1 : index
    %xt = tile.load %x[%m0, %n1] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>""",
        "loads of other tiles or at other coordinates",
    ),
    "other_tensor": (
        """scf.for %n = %c0 to %N step %bn {
    %xt = tile.load %z[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>""",
        "loads of other tiles or at other coordinates",
    ),
    "other_rows": (
        """scf.for %n = %c0 to %N step %bn {
    %m1 = arith.addi %m0, %bm : index
    %xt = tile.load %x[%m1, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>""",
        "loads of other tiles or at other coordinates",
    ),
    "other_bounds": (
        """%n0 = arith.constant 256 : index
  scf.for %n = %n0 to %N step %bn {
    %xt = tile.load %x[%m0, %n] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<16x256xbf16>""",
        "its loops run over other bounds",
    ),
}


def _arefs(loop2: str, options: PipelineOptions | None = None, stop: str = "plan"):
    module = parse_text(KERNEL.replace("LOOP2", loop2), "k.mlir")
    spec = (options or PipelineOptions()).pipeline(stop=stop)
    make_pipeline(spec).apply(make_context(), module)
    return module, {c.ident: c for c in module.walk() if isinstance(c, aref.CreateOp)}


def test_a_loop_that_reads_the_first_loops_tiles_again_makes_a_chain():
    _, creates = _arefs(SAME)
    chain = rereads(creates["x"])
    assert isinstance(chain, Rereads)
    assert len(chain.puts) == len(chain.gets) == len(chain.releases) == 2
    assert chain.producer_loops[0] is not chain.producer_loops[1]
    plan = explain_module(parse_text(KERNEL.replace("LOOP2", SAME), "k.mlir"), PipelineOptions())
    (x,) = plan["arefs"]
    assert x["resident"] and x["resident_loops"] == 2
    assert x["depth"] == 28  # 8 KiB slots (16 x 256 bf16): what 227 KiB hold


@pytest.mark.parametrize("case", sorted(OTHERS))
def test_other_tiles_in_a_later_loop_are_no_chain_and_not_resident(case):
    loop2, why = OTHERS[case]
    _, creates = _arefs(loop2)
    shared = [c for c in creates.values() if len(list(c.result.uses)) > 3]
    assert shared, "the two loops share one ring (warp-specialize)"
    assert rereads(shared[0]) == why
    text = KERNEL.replace("LOOP2", loop2)
    plan = explain_module(parse_text(text, "k.mlir"), PipelineOptions())
    assert not any(a.get("resident") for a in plan["arefs"])


def test_without_the_knob_nothing_is_resident():
    text = KERNEL.replace("LOOP2", SAME)
    plan = explain_module(parse_text(text, "k.mlir"), PipelineOptions(reuse_slots=False))
    assert not any(a.get("resident") for a in plan["arefs"])
    assert [a["depth"] for a in plan["arefs"]] == [8]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"lag": 1}, "it cannot also release them late (lag)"),
        ({"multicast": (0,)}, "a cluster's rings are not kept on chip yet"),
    ],
)
def test_a_resident_aref_released_late_or_multicast_is_refused(change, why):
    """`plan`'s check: a resident ring's slots are held to the last loop (no release lag),
    and a cluster's multicast rings are not kept (not built)."""
    import dataclasses

    from tawac import schedule
    from tawac.schedule.check import check
    from tawac.support.diagnostics import CompileError

    _, creates = _arefs(SAME, stop="pipeline")  # planned
    kernel = creates["x"].parent_op()
    s = schedule.of(kernel)
    assert s.aref("x").resident
    check(kernel, s)
    arefs = tuple(dataclasses.replace(a, **change) if a.name == "x" else a for a in s.arefs)
    with pytest.raises(CompileError, match=re.escape(why)):
        check(kernel, dataclasses.replace(s, arefs=arefs))


@pytest.mark.parametrize(
    ("n", "tiles", "kept"), [(4096, 16, True), (7000, 28, True), (8192, 32, False)]
)
def test_explain_says_whether_a_row_stays_on_chip_at_a_size(n, tiles, kept):
    """`explain --size`: the resident aref's column blocks per program at that size
    (ceil(N / 256)) against its 28 slots."""
    text = KERNEL.replace("LOOP2", SAME)
    plan = explain_module(parse_text(text, "k.mlir"), PipelineOptions(), sizes={"M": 4096, "N": n})
    (x,) = plan["arefs"]
    assert x["resident_tiles"] == tiles
    assert (x["resident_tiles"] <= x["depth"]) is kept
