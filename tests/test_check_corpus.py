"""benchmarks/check_corpus.py without a GPU: its configurations cover every knob that
changes code, its compile step tells a refusal from a failure, and its reference (the
original program interpreted on its own grid) and output check catch a wrong, a NaN and
a missing result."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from gpu_util import load_module

ROOT = Path(__file__).resolve().parents[1]
check = load_module(ROOT / "benchmarks" / "check_corpus.py", "check_corpus_module")


def test_every_knob_that_changes_code_is_swept():
    from tawac.support.options import KNOBS, PipelineOptions

    defaults = dataclasses.asdict(PipelineOptions(schedule="auto"))
    for k in KNOBS:
        if k.name in check.UNSWEPT:
            continue
        values = {c[k.name] for c in check.CONFIGS.values() if k.name in c}
        assert values - {defaults[k.name]}, f"{k.name} is never varied"
    planners = {c["schedule"] for c in check.CONFIGS.values() if "schedule" in c}
    assert planners == {"heuristic", "solver", "auto"}
    for name, config in check.CONFIGS.items():
        PipelineOptions(**check.options_of(config)).check()  # every value is one it takes
        if name != "auto":
            assert check.options_of(config) != check.options_of(check.CONFIGS["auto"]), name


def test_configs_are_named_or_spelled_as_knobs():
    assert check.parse_configs("auto,sk2") == {"auto": {"schedule": "auto"}, "sk2": {"split_k": 2}}
    assert check.parse_configs("all") == check.CONFIGS
    assert check.parse_configs("stages=2:pingpong=1") == {
        "stages=2:pingpong=1": {"stages": 2, "pingpong": True}
    }
    assert check.parse_configs("tma-store=false") == {"tma-store=false": {"tma_store": False}}
    for bad in ("nonesuch", "stages=x", "nonesuch=1", ""):
        with pytest.raises(ValueError):
            check.parse_configs(bad)


def test_the_compile_step_tells_a_refusal_from_a_failure():
    gemm = str(ROOT / "examples" / "gemm.mlir")
    jobs = [
        {"key": "ok", "source": gemm, "options": {"schedule": "heuristic"}},
        {"key": "refused", "source": gemm, "options": {"consumer_warp_groups": 3}},
        {"key": "parse", "text": "tile.kernel @k(", "filename": "bad.mlir", "options": {}},
        {"key": "internal", "source": gemm, "options": {"no_such_knob": 1}},
    ]
    got = {r["key"]: r for r in check.compile_many(jobs, 1)}
    assert got["ok"]["status"] == "ok" and got["ok"]["cubin"] and got["ok"]["sidecar"]["args"]
    assert got["refused"]["status"] == "refused" and got["refused"]["located"]
    assert "gemm.mlir:" in got["refused"]["message"]
    assert got["parse"]["status"] == "refused" and got["parse"]["located"]
    assert got["internal"]["status"] == "error" and "no_such_knob" in got["internal"]["message"]


def test_an_unlocated_refusal_is_a_failure_of_the_sweep():
    programs = [{"name": "p", "source": "x.mlir", "check_sizes": {}}]
    sweep = check.Sweep(programs, {"a": {}, "b": {}}, run=False, tol=check.TOL, seed=0)
    sweep.add({"key": ("p", "a"), "status": "refused", "located": True, "message": "x:1:1: e",
               "seconds": 0.1, "cubin": b"", "sidecar": None})  # fmt: skip
    done = sweep.add({"key": ("p", "b"), "status": "refused", "located": False,
                      "message": "e", "seconds": 0.1, "cubin": b"", "sidecar": None})  # fmt: skip
    assert done == "p"
    assert [check.cell_text(c) for c in sweep.cells["p"].values()] == ["-", "ERR!"]
    s = check.summary(sweep)
    assert (s["refused"], s["failed"], s["checked"]) == (1, 1, 0)


def test_the_reference_runs_the_original_on_its_own_grid_and_catches_wrong_outputs():
    """The decode attention's compiled kernel groups its 16 query heads by 8 (a launch
    grid of 2 heads): the reference still computes all 16, and a wrong, a NaN or a
    missing element of the output fails the check."""
    import torch

    from tawac.driver import kernel_op

    entry = next(p for p in check.load_corpus() if p["name"] == "attention_decode_gqa8")
    op = kernel_op(ROOT / entry["source"])
    ref = check.Reference(op, entry["check_sizes"], seed=0, device="cpu")
    (o,) = (ref.ref[i] for i in ref.stores)
    assert o.shape[1] == 16 and bool(torch.isfinite(o).all())
    assert [s["name"] for s in ref.specs] == ["q", "k", "v", "o", "scale_log2e"]

    def outputs(change):
        args = ref.fresh_args()
        args[ref.stores[0]] = change(ref.ref[ref.stores[0]].clone()).bfloat16()
        return args

    same = ref.check(outputs(lambda t: t))
    assert same["ok"] and same["max_error"] < 1e-2
    wrong = ref.check(outputs(lambda t: t * 1.1))
    assert not wrong["ok"] and wrong["max_error"] > check.TOL

    def nan_at_one(t):
        t[1, 9, 0, 0] = math.nan  # a head the grouped launch grid does not name
        return t

    nan = ref.check(outputs(nan_at_one))
    assert not nan["ok"] and nan["nan_outputs"] == ["o"]
    missing = ref.check(ref.fresh_args())  # the kernel wrote nothing: all NaN
    assert not missing["ok"] and math.isnan(missing["max_error"])
