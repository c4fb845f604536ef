"""CI fuzzing: a fixed-seed campaign of 600 mutants of every example and test kernel
through `tawac compile` (tawac/fuzz), in two shards of 300 that the test workers run in
parallel (mutants 0-299 and 300-599 of seed 1: the campaign is the same, however it is
split), with no finding allowed.  It guards the rule for bad input against regressions
in about 25 s of CPU; the long campaigns (8,000 mutants and more, docs/fuzzing.md) run
outside the suite with `python -m tawac.fuzz`.

A finding is an input that breaks the rule for bad input: an internal compiler error, a
traceback, a hang, a crash, output left behind on failure, anything but one diagnostic
line on failure, or PTX that ptxas rejects.  Reproduce one with
`python -m tawac.fuzz --replay <path>` (the paths are in the failure message), or the
campaign with `python -m tawac.fuzz --seed 1 --inputs 600 --out DIR`.
"""

from __future__ import annotations

import multiprocessing

import pytest

from tawac.fuzz.harness import run_campaign

SEED = 1
INPUTS = 600
SHARDS = 2
SECONDS = 60  # per shard: never start inputs after this (the in-flight ones still finish)


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
    )
    # In a fresh process: the campaign forks a child per mutant, and forking a test
    # worker that has loaded torch costs half as much again.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        summary = pool.apply(run_campaign, kwds=options)
    assert summary.inputs >= size // 4, summary.format()
    assert summary.counts["accepted"] > 0, summary.format()
    assert summary.findings == 0, "fuzz findings:\n" + summary.format()
