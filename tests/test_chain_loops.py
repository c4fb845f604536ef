"""Chained loops (`tawac.schedule.chain`, docs/design/passes.md): `plan` marks the tutorial
causal attention's off-diagonal key loop `chained` to its diagonal loop (the knob
`chain_loops`), the mark prints and parses back, `chain_problem` says why a pair cannot
chain, and one-loop kernels are never marked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tawac import schedule
from tawac.analysis.loops import main_loops
from tawac.compiler import default_pipeline, parse_file, parse_text, run_pipeline
from tawac.dialects import aref, tile
from tawac.schedule.chain import chain_problem

REPO = Path(__file__).resolve().parent.parent
CAUSAL = REPO / "examples/triton/attention_causal.ttir"


def _planned(path: Path, **options):
    module = parse_file(path)
    spec = default_pipeline(**options)
    run_pipeline(module, spec[: spec.index(",pipeline,")])
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    return module, kernel


def _consumer_loops(kernel):
    part = next(
        p
        for p in kernel.body.block.ops
        if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    )
    return main_loops(part)


def test_plan_chains_the_tutorial_causal_loops_and_the_mark_round_trips():
    module, kernel = _planned(CAUSAL)
    loops = [lp for lp in schedule.of(kernel).loops if lp.role == "consumer"]
    assert [(lp.loop, lp.chained) for lp in loops] == [(0, True), (1, False)]
    text = str(module)
    assert "consumer 0 chained: [" in text
    again = next(o for o in parse_text(text, "again.mlir").walk() if isinstance(o, tile.KernelOp))
    assert schedule.of(again).loops == schedule.of(kernel).loops


def test_the_knob_off_chains_nothing():
    _, kernel = _planned(CAUSAL, chain_loops=False)
    assert not any(lp.chained for lp in schedule.of(kernel).loops)


@pytest.mark.parametrize("example", ["attention.mlir", "attention_causal.mlir", "gemm.mlir"])
def test_one_loop_kernels_are_not_chained(example):
    _, kernel = _planned(REPO / "examples" / example)
    assert not any(lp.chained for lp in schedule.of(kernel).loops)


def test_chain_problem_names_what_stands_in_the_way():
    _, kernel = _planned(CAUSAL, chain_loops=False)
    first, second = _consumer_loops(kernel)
    lp1, lp2 = (schedule.of(kernel).loop("consumer", k) for k in (0, 1))
    assert lp1 is not None and lp2 is not None
    assert chain_problem(first, lp1, second, lp2) is None
    one_stage = dataclasses.replace(
        lp1, ops=tuple(dataclasses.replace(o, stage=0) for o in lp1.ops), waits=()
    )
    assert "do not both have two-stage schedules" in str(
        chain_problem(first, one_stage, second, lp2)
    )
    # the other way round: the diagonal loop is not followed by the off-diagonal one
    assert chain_problem(second, lp2, first, lp1) is not None


def test_explain_says_which_loops_are_chained():
    from tawac.tools.explain import _loops

    _, kernel = _planned(CAUSAL)
    loops = {(lp["role"], lp["loop"]): lp["chained"] for lp in _loops(kernel, schedule.of(kernel))}
    assert loops == {
        ("producer", 0): False,
        ("producer", 1): False,
        ("consumer", 0): True,
        ("consumer", 1): False,
    }
