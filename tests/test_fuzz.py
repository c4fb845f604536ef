"""CI fuzzing: a fixed-seed campaign of 600 mutants of every example and test kernel
through `tawac compile` (tawac/fuzz), in two shards of 300 that the test workers run in
parallel (mutants 0-299 and 300-599 of seed 1: the campaign is the same, however it is
split), with no finding allowed.  It guards the rule for bad input against regressions
in about 25 s of CPU; the long campaigns (8,000 mutants and more, docs/fuzzing.md) run
outside the suite with `python -m tawac.fuzz`.  A tenth of the accepted mutants are also
checked for meaning (the tile-level passes against the interpreter, `tawac.fuzz.meaning`).

A finding is an input that breaks the rule for bad input: an internal compiler error, a
traceback, a hang, a crash, output left behind on failure, anything but one diagnostic
line on failure, or PTX that ptxas rejects; or an accepted input whose meaning a
tile-level pass changed (`mismatch`).  Reproduce one with
`python -m tawac.fuzz --replay <path>` (the paths are in the failure message), or the
campaign with `python -m tawac.fuzz --seed 1 --inputs 600 --check-meaning 0.2 --out DIR`.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from programs import hoisted_mask

from tawac.fuzz.harness import execute, replay, run_campaign, save
from tawac.fuzz.meaning import Check

REPO = Path(__file__).resolve().parent.parent
SEED = 1
INPUTS = 600
SHARDS = 2
SECONDS = 60  # per shard: never start inputs after this (the in-flight ones still finish)
#: The share of the accepted mutants checked for meaning: drawn per input from (seed,
#: index), so a shard of 300 inputs with some 20 accepted asks about 4 (at 10% a shard
#: may draw none: the corpus grew, the draw moved, and shard 0 asked nothing).
CHECK_MEANING = 0.2


@pytest.mark.parametrize("shard", range(SHARDS))
def test_fuzz_campaign_has_no_findings(tmp_path, shard):
    size = INPUTS // SHARDS
    options = dict(
        inputs=size,
        first=shard * size,
        seconds=SECONDS,
        seed=SEED,
        timeout=45,  # the default planner (auto) runs the solver: up to 30 s a kernel
        out=tmp_path,
        progress=None,
        check_meaning=CHECK_MEANING,
    )
    # In a fresh process: the campaign forks a child per mutant, and forking a test
    # worker that has loaded torch costs half as much again.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        summary = pool.apply(run_campaign, kwds=options)
    assert summary.inputs >= size // 4, summary.format()
    assert summary.counts["accepted"] > 0, summary.format()
    assert summary.findings == 0, "fuzz findings:\n" + summary.format()
    if summary.inputs == size:  # every input ran: the shard asked its meaning checks
        assert sum(summary.meaning.values()) > 0, summary.format()


# ---- a pass that changes the meaning of an accepted mutant is a finding


ATTENTION = Check(
    "examples/attention.mlir",
    "attention (small)",
    {"B": 1, "H": 1, "S": 200, "D": 128, "scale_log2e": 0.18},  # a ragged key block
)


def _never(mask, b):
    """guard-masks' "some element is false", broken on purpose: always false."""
    from xdsl.dialects import arith

    return b._add(arith.ConstantOp.from_int_and_width(0, 1))


def _mismatch_run(tmp: str) -> dict:
    """In a fresh process (forked children inherit the patch; a test worker that ran
    torch must not fork one that runs it again: its thread pool's locks come along):
    the hoisted-mask attention through the harness with guard-masks broken, saved and
    replayed, then replayed with the pass intact."""
    from tawac.passes import guard_masks

    intact = guard_masks._some_false
    guard_masks._some_false = _never
    try:
        data = hoisted_mask("attention.mlir").encode()
        item = (7, "examples/attention.mlir", ["mask moved into the loop"], data, [], ATTENTION)
        (res,) = execute([item], jobs=1, timeout=45, check_timeout=120)
        path = save(res, Path(tmp), 1) if res.cls == "mismatch" else None
        again = replay(path, use_ptxas=False, timeout=45, check_timeout=120) if path else None
    finally:
        guard_masks._some_false = intact
    fixed = replay(path, use_ptxas=False, timeout=45, check_timeout=120) if path else None
    return {
        "res": res,
        "check": path.with_suffix(".check").read_text() if path else None,
        "again": again,
        "fixed": fixed,
    }


def test_a_pass_that_changes_the_meaning_is_a_mismatch(tmp_path):
    """guard-masks broken on purpose (its "some element is false" condition always
    false, so the ragged key block keeps the keys past the end): the harness's meaning
    check of the accepted mutant is a `mismatch` finding naming the pass, saved with its
    check, and replays as one; with the pass intact the replay agrees."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out = pool.apply(_mismatch_run, (str(tmp_path),))
    res = out["res"]
    assert res.cls == "mismatch", res.report()
    assert res.meaning == "mismatch" and res.detail == res.meaning_detail
    assert res.detail.startswith(
        "guard-masks changed the meaning of examples/attention.mlir (mutant 7): o["
    ), res.detail
    assert res.signature.startswith("mismatch: guard-masks changed the meaning of <path>")

    assert Check.from_json(out["check"]) == ATTENTION
    again = out["again"]
    assert again.cls == "mismatch", again.report()
    assert again.detail.split(": ", 1)[1] == res.detail.split(": ", 1)[1]

    fixed = out["fixed"]
    assert fixed.cls == "accepted", fixed.report()
    assert fixed.meaning == "checked" and "guard-masks" in fixed.meaning_detail
