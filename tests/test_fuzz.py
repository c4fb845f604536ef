"""CI fuzzing: a fixed-seed campaign of mutants of every example and test kernel through
`tawac compile` (tawac/fuzz), about a minute on two cores, with no finding allowed.

A finding is an input that breaks the rule for bad input: an internal compiler error, a
traceback, a hang, a crash, output left behind on failure, anything but one diagnostic
line on failure, or PTX that ptxas rejects.  Reproduce one with
`python -m tawac.fuzz --replay <path>` (the paths are in the failure message), or the
campaign with `python -m tawac.fuzz --seed 1 --inputs 2000 --out DIR`.
"""

from __future__ import annotations

from tawac.fuzz.harness import run_campaign

SEED = 1
INPUTS = 2000  # about 60 s on two cores
SECONDS = 70  # never start inputs after this (the in-flight ones still finish)


def test_fuzz_campaign_has_no_findings(tmp_path):
    summary = run_campaign(
        inputs=INPUTS, seconds=SECONDS, seed=SEED, timeout=15, out=tmp_path, progress=None
    )
    assert summary.inputs >= 200, summary.format()
    assert summary.counts["accepted"] > 0, summary.format()
    assert summary.findings == 0, "fuzz findings:\n" + summary.format()
