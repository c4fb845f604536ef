"""`tawac tune` without a GPU: the space, the candidates, the compile phase (through the
real process pool), ranking, the tuning table, and the command line (`--compile-only`,
the no-GPU error). Timing is faked; tests/test_gpu_tune.py tunes on a GPU."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from rich.console import Console

from tawac.schedule.tuning import load_table, pick, source_sha256
from tawac.support.diagnostics import CompileError
from tawac.tools import cli
from tawac.tools import tune as tn
from tawac.tools.tune import Axis, Candidate, Compiled, Measured, Timings
from tawac.tools.tune_space import space_size

REPO = Path(__file__).resolve().parent.parent
GEMM = REPO / "examples" / "gemm.mlir"

SIDE_ARGS = [
    {"name": "a", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["M", "K"]},
    {"name": "c", "kind": "tensor", "dtype": "bf16", "rank": 2, "dims": ["M", "N"]},
]


# --------------------------------------------------------------------------- fakes


def fake_compile(source, params, options):
    """A compile function for the worker processes (module level: picklable). BLOCK_N=256
    with 4 stages does not fit shared memory; stages=13 is a compiler bug."""
    if params.get("BLOCK_N") == 256 and options.get("stages") == 4:
        raise CompileError(
            "lower-aref: the aref rings need 245840 bytes of shared memory",
            location=f"{source}:3:1",
        )
    if options.get("stages") == 13:
        raise ZeroDivisionError("division by zero")
    sidecar = {
        "kernel": "gemm",
        "args": SIDE_ARGS,
        "block": [384, 1, 1],
        "dynamic_smem": 1024 * (params.get("BLOCK_N", 256) + options.get("stages", 0)),
        "kernel_params": {"BLOCK_M": 128, "BLOCK_N": 256, **params},
        "pid": os.getpid(),
    }
    key = json.dumps([params, {k: v for k, v in options.items() if k != "schedule"}])
    return SimpleNamespace(cubin=b"\x7fELF", sidecar=sidecar, key=key, hit=False)


def fake_measure(times: dict[str, float], wrong=(), calls=None):
    """A timing function: `times` by candidate label (scaled by M / 1024); the labels in
    `wrong` compute a wrong result."""

    def measure(source, sizes, compiled, *, rep_ms, advance):
        if calls is not None:
            calls.append((dict(sizes), [c.candidate.label() for c in compiled]))
        rows = []
        for c in compiled:
            label = c.candidate.label()
            if label in wrong:
                rows.append(Measured(c.candidate, error=0.4, reject="wrong result: 0.4 > 0.02"))
            else:
                t = times.get(label, 1.0) * sizes["M"] / 1024
                rows.append(Measured(c.candidate, time_ms=t, tflops=1.0 / t, error=1e-3))
            advance()
        return Timings("Fake H100", rows)

    return measure


def _consoles():
    out, err = io.StringIO(), io.StringIO()
    return out, err, Console(file=out, width=200), Console(file=err, width=200)


def _source(tmp_path: Path, text: str = "// a kernel\n") -> str:
    path = tmp_path / "k.mlir"
    path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------- the space


def test_space_options_and_params():
    axes = tn.parse_space(["BLOCK_N=64,128,256", "mma-depth=0,1", "persistent=true,False"])
    assert axes == [
        Axis("BLOCK_N", "param", (64, 128, 256)),
        Axis("mma_depth", "option", (0, 1)),
        Axis("persistent", "option", (True, False)),
    ]
    assert [type(v) for v in axes[2].values] == [bool, bool]


def test_space_values():
    (axis,) = tn.parse_space(["tma_store=1,0"])
    assert axis == Axis("tma_store", "option", (True, False))
    (axis,) = tn.parse_space(["persistent=TRUE,0"])
    assert axis == Axis("persistent", "option", (True, False))
    (axis,) = tn.parse_space(["schedule=heuristic,SOLVER"])
    assert axis == Axis("schedule", "option", ("heuristic", "solver"))
    (axis,) = tn.parse_space(["BLOCK_K= 32, -1 ,+64"])
    assert axis == Axis("BLOCK_K", "param", (32, -1, 64))


@pytest.mark.parametrize(
    "items,message",
    [
        (["stages=3,x"], "--space stages: expected an integer, got 'x'"),
        (["BLOCK_N=64,1.5"], "--space BLOCK_N: expected an integer, got '1.5'"),
        (["stages="], "--space stages: no values"),
        (["stages=3,,4"], "--space stages: empty value in '3,,4'"),
        (["stages"], "--space expects NAME=V1,V2,..., got 'stages'"),
        (["=3"], "--space expects NAME=V1,V2,..., got '=3'"),
        (["mma-depth=0", "mma_depth=1"], "--space mma_depth given twice"),
        (["BLOCK_N=64", "BLOCK_N=128"], "--space BLOCK_N given twice"),
        (["stages=3,4,3"], "--space stages: value 3 given twice"),
        (["persistent=true,1"], "--space persistent: value true given twice"),
        (["persistent=yes"], "--space persistent: expected true, false, 1 or 0, got 'yes'"),
        (["schedule=greedy"], "--space schedule: expected heuristic, solver, auto, got 'greedy'"),
        (["stage=3"], "--space stage: not a pipeline option (schedule, stages, mma-depth"),
        (["block_n=64"], "parameter names are upper case"),
        (["stages=1234567890123"], "expected an integer"),
    ],
)
def test_space_errors(items, message):
    with pytest.raises(CompileError) as e:
        tn.parse_space(items)
    assert message in str(e.value)


def test_too_many_candidates():
    axes = tn.parse_space(
        [
            "BLOCK_N=" + ",".join(map(str, range(1, 33))),
            "BLOCK_M=" + ",".join(map(str, range(1, 17))),
            "stages=1,2",
        ]
    )
    assert space_size(axes) == 1024
    with pytest.raises(CompileError, match=r"1024 candidates \(32 x 16 x 2\), more than 512"):
        tn.enumerate_candidates(axes)
    assert len(tn.enumerate_candidates(axes[:2])) == 512


def test_candidates_first_axis_slowest():
    axes = tn.parse_space(["BLOCK_N=64,128", "stages=3,4", "BLOCK_M=64"])
    labels = [c.label() for c in tn.enumerate_candidates(axes)]
    assert labels == [
        "BLOCK_N=64 BLOCK_M=64 stages=3",
        "BLOCK_N=64 BLOCK_M=64 stages=4",
        "BLOCK_N=128 BLOCK_M=64 stages=3",
        "BLOCK_N=128 BLOCK_M=64 stages=4",
    ]
    c = tn.enumerate_candidates(axes)[1]
    assert c.params == {"BLOCK_N": 64, "BLOCK_M": 64} and c.options == {"stages": 4}
    assert tn.enumerate_candidates([]) == [Candidate()]
    assert Candidate().is_default and Candidate().label() == "default"
    assert Candidate(options={"persistent": False}).label() == "persistent=false"


def test_sizes():
    assert tn.parse_sizes("M=1024,N=512, K=64") == {"M": 1024, "N": 512, "K": 64}
    for bad in ("M=1k", "M", "=3", "M=1,M=2"):
        with pytest.raises(CompileError, match="--size"):
            tn.parse_sizes(bad)


# --------------------------------------------------------------------------- compiling


def test_compile_phase_in_worker_processes(tmp_path):
    """Two workers of the real pool: results in the candidates' order, a candidate that
    does not compile is rejected with its one-line diagnostic, a compiler bug in one is
    recorded, not fatal."""
    source = _source(tmp_path)
    axes = tn.parse_space(["BLOCK_N=128,256", "stages=4,13"])
    todo = [Candidate(), *tn.enumerate_candidates(axes)]
    ticks = []
    got = tn.compile_all(
        source, todo, jobs=2, compile_fn=fake_compile, advance=lambda: ticks.append(1)
    )
    assert len(ticks) == len(todo) == 5
    assert [c.candidate for c in got] == todo
    assert [c.ok for c in got] == [True, True, False, False, False]
    assert got[3].error == (
        f"{source}:3:1: error: lower-aref: the aref rings need 245840 bytes of shared memory"
    )
    assert got[2].error == "internal compiler error: ZeroDivisionError: division by zero"
    assert got[4].error == got[2].error
    assert got[1].sidecar["kernel_params"]["BLOCK_N"] == 128 and got[1].cubin == b"\x7fELF"
    pids = {c.sidecar["pid"] for c in got if c.ok}
    assert os.getpid() not in pids  # compiled in the workers


def test_compile_phase_base_options_in_process(tmp_path):
    seen = []

    def compile_fn(source, params, options):
        seen.append(options)
        return fake_compile(source, params, options)

    got = tn.compile_all(
        _source(tmp_path),
        [Candidate(), Candidate(options={"stages": 3})],
        jobs=1,
        compile_fn=compile_fn,
        base_options={"schedule": "solver"},
    )
    assert all(c.ok for c in got)
    assert seen == [{"schedule": "solver"}, {"schedule": "solver", "stages": 3}]


def test_undeclared_parameter_is_an_error():
    ok = Compiled(Candidate(), b"", {"kernel_params": {"BLOCK_M": 1, "BLOCK_N": 2}})
    tn.check_declared(tn.parse_space(["BLOCK_N=1", "stages=1"]), [ok])
    with pytest.raises(
        CompileError,
        match="BLOCK_NN: the kernel declares no such parameter "
        r"\(it declares BLOCK_M, BLOCK_N\)",
    ):
        tn.check_declared(tn.parse_space(["BLOCK_NN=1"]), [ok])
    bare = Compiled(Candidate(), b"", {"args": []})
    with pytest.raises(CompileError, match="it declares none"):
        tn.check_declared(tn.parse_space(["BLOCK_N=1"]), [bare])


# --------------------------------------------------------------------------- ranking


def _row(label: str, t: float | None, reject: str | None = None) -> Measured:
    params = {} if label == "default" else {"BLOCK_N": int(label)}
    return Measured(Candidate(params), time_ms=t, reject=reject)


def test_ranking_and_winner():
    rows = [
        _row("default", 2.0),
        _row("64", 1.0, reject="wrong result: relative error 0.5 > 0.02"),
        _row("128", 1.5),
        _row("256", 1.5),
        _row("32", None, reject="compile: error: too big"),
    ]
    ranked = tn.rank(rows)
    assert [r.candidate.label() for r in ranked] == [
        "BLOCK_N=128",
        "BLOCK_N=256",  # a tie: the earlier candidate first
        "default",
        "BLOCK_N=64",
        "BLOCK_N=32",
    ]
    best = tn.winner(rows)
    assert best is rows[2]  # the wrong result is faster, but never wins
    assert tn.speedup(best, rows[0]) == pytest.approx(2.0 / 1.5)
    assert tn.speedup(rows[1], rows[0]) is None
    assert tn.speedup(best, None) is None
    assert tn.winner([rows[1], rows[4]]) is None
    assert tn.winner([]) is None


def test_the_winner_beats_the_default_in_every_round():
    """A candidate faster by the median but not in every round-robin round is within
    the machine's noise: the next one that is faster in every round wins, else the
    default; the table printout says why the faster one lost."""

    def row(label, rounds):
        params = {} if label == "default" else {"BLOCK_N": int(label)}
        return Measured(Candidate(params), time_ms=sorted(rounds)[1], rounds=rounds)

    default = row("default", (1.00, 1.02, 0.99))
    lucky = row("64", (0.95, 1.03, 0.96))  # median 0.96, but slower in round 2
    steady = row("128", (0.98, 1.00, 0.97))  # median 0.98, faster in all three
    assert tn.winner([default, lucky, steady]) is steady
    assert tn.winner([default, lucky]) is default
    assert tn.beats(steady, default) and not tn.beats(lucky, default)
    # without a correct default: the fastest correct row
    broken = dataclasses.replace(default, reject="wrong result: NaN in c")
    assert tn.winner([broken, lucky, steady]) is lucky
    res = tn.SizeResult({"M": 64}, tn.rank([default, lucky, steady]), default, steady, "dev")
    out = io.StringIO()
    tn.print_size(res, Console(file=out, width=200))
    text = out.getvalue()
    assert "not faster than the default in every round" in text
    assert text.count("best") == 1


def test_same_kernel_is_timed_once():
    default = Compiled(Candidate(), b"", {}, key="k1")
    same = Compiled(Candidate(options={"stages": 3}), b"", {}, key="k1")
    other = Compiled(Candidate(options={"stages": 4}), b"", {}, key="k2")
    bad = Compiled(Candidate(options={"stages": 9}), error="error: too big")
    unkeyed = Compiled(Candidate(options={"stages": 2}), b"", {}, key="")
    compiled = [default, same, bad, other, unkeyed]
    unique, twins = tn.unique_kernels(compiled)
    assert unique == [default, other, unkeyed] and twins == {1: 0}
    times = [1.0, 2.0, 0.5]
    timings = Timings(
        "dev", [Measured(c.candidate, time_ms=t) for c, t in zip(unique, times, strict=True)]
    )
    res = tn.size_result({"M": 64}, compiled, timings)
    labels = [(r.candidate.label(), r.time_ms, r.note) for r in res.rows]
    assert labels == [
        ("stages=2", 0.5, None),
        ("default", 1.0, None),
        ("stages=3", 1.0, "same kernel as default"),
        ("stages=4", 2.0, None),
        ("stages=9", None, None),
    ]
    assert res.rows[-1].reject == "compile: error: too big"
    assert res.winner.candidate.label() == "stages=2" and res.default.time_ms == 1.0


# --------------------------------------------------------------------------- the table


def _entry(bucket, stages, t=1.0):
    return {"bucket": bucket, "params": {}, "options": {"stages": stages}, "time_ms": t}


def test_merge_keeps_other_buckets_and_replaces_tuned_ones():
    old = {
        "format": 1,
        "kernel": "gemm",
        "source_sha256": "abc",
        "args": [],
        "entries": [_entry({"M": 1024}, 3), _entry({"M": 2048}, 3), _entry({"M": 4096}, 3)],
    }
    new = [_entry({"M": 2048}, 4), _entry({"M": 8192}, 4)]
    table, stale = tn.merge_table(old, new, kernel="gemm", sha256="abc", args=SIDE_ARGS)
    assert not stale
    assert [(e["bucket"]["M"], e["options"]["stages"]) for e in table["entries"]] == [
        (1024, 3),
        (2048, 4),
        (4096, 3),
        (8192, 4),
    ]
    assert table["args"] == SIDE_ARGS and table["format"] == 1


def test_merge_stale_table_starts_anew():
    old = {"format": 1, "source_sha256": "old", "entries": [_entry({"M": 1024}, 3)]}
    new = [_entry({"M": 2048}, 4)]
    table, stale = tn.merge_table(old, new, kernel="gemm", sha256="new", args=[])
    assert stale and table["entries"] == new and table["source_sha256"] == "new"
    table, stale = tn.merge_table(None, new, kernel="gemm", sha256="new", args=[])
    assert not stale and table["entries"] == new


def test_merge_same_bucket_twice_keeps_the_last():
    new = [_entry({"M": 1024, "N": 8}, 3), _entry({"N": 8, "M": 1024}, 4)]
    table, _ = tn.merge_table(None, new, kernel="k", sha256="s", args=[])
    assert [e["options"] for e in table["entries"]] == [{"stages": 4}]


def test_write_table_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "k.tune.json"
    tn.write_table(path, {"format": 1, "entries": []})
    assert json.loads(path.read_text()) == {"format": 1, "entries": []}

    def broken(*args, **kwargs):
        raise TypeError("cannot serialize")

    monkeypatch.setattr(tn.json, "dumps", broken)
    with pytest.raises(TypeError):
        tn.write_table(path, {"format": 2})
    assert json.loads(path.read_text()) == {"format": 1, "entries": []}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.tune.json"]
    with pytest.raises(CompileError, match="does not exist"):
        tn.write_table(tmp_path / "missing" / "t.json", {})


# --------------------------------------------------------------------------- the whole search


TIMES = {
    "default": 2.0,
    "BLOCK_N=128 stages=3": 1.2,
    "BLOCK_N=128 stages=4": 0.5,  # fastest, but computes a wrong result
    "BLOCK_N=256 stages=3": 1.6,
}


def _tune(source, sizes, space, **kw):
    out, err, oc, ec = _consoles()
    kw.setdefault("compile_fn", fake_compile)
    kw.setdefault("measure_fn", fake_measure(TIMES, wrong={"BLOCK_N=128 stages=4"}))
    res = tn.run_tune(source, sizes, tn.parse_space(space), jobs=1, out=oc, err=ec, **kw)
    return res, out.getvalue(), err.getvalue()


def test_tune_picks_the_fastest_correct_candidate_per_size(tmp_path):
    source = _source(tmp_path)
    calls = []
    res, out, err = _tune(
        source,
        [{"M": 1024, "N": 1024, "K": 64}, {"M": 2000, "N": 2048, "K": 64}],
        ["BLOCK_N=128,256", "stages=3,4"],
        measure_fn=fake_measure(TIMES, wrong={"BLOCK_N=128 stages=4"}, calls=calls),
        base_options={"schedule": "solver"},
    )
    # BLOCK_N=256 stages=4 does not compile: never timed
    assert [c[1] for c in calls] == [[*TIMES]] * 2
    assert [r.winner.candidate.label() for r in res.sizes] == ["BLOCK_N=128 stages=3"] * 2
    path = tmp_path / "k.tune.json"
    assert res.table_path == path
    table = load_table(path)
    assert table["kernel"] == "gemm" and table["args"] == SIDE_ARGS
    assert table["source_sha256"] == source_sha256(Path(source).read_text())
    e1, e2 = table["entries"]
    assert e1["bucket"] == {"M": 1024, "N": 1024, "K": 64}
    assert e2["bucket"] == {"M": 2048, "N": 2048, "K": 64}
    assert e1["params"] == {"BLOCK_N": 128}
    assert e1["options"] == {"widen": 0, "schedule": "solver", "stages": 3}
    assert e1["time_ms"] == 1.2 and e1["tflops"] == pytest.approx(1 / 1.2)
    assert e1["device"] == "Fake H100"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", e1["date"])
    # the tables: ranked, speedup over the default, the rejected with their reasons
    assert "M=1024,N=1024,K=64 on Fake H100" in out
    assert re.search(r"1 +│ BLOCK_N=128 stages=3 +│ +1\.2000 .*│ +1\.67x │ best", out)
    assert "wrong result: 0.4 > 0.02" in out
    assert "compile: " + source + ":3:1: error: lower-aref" in out
    assert f"table: {path} (2 bucket(s) tuned, 0 kept)" in out
    assert "compiled 4 (0 from the cache), rejected 1" in err


def test_tune_merges_into_the_existing_table(tmp_path):
    source = _source(tmp_path)
    _tune(source, [{"M": 1024}, {"M": 4096}], ["BLOCK_N=128,256", "stages=3"])
    faster = dict(TIMES, default=0.1)
    res, out, err = _tune(
        source, [{"M": 1000}], ["BLOCK_N=128,256", "stages=3"], measure_fn=fake_measure(faster)
    )
    table = load_table(tmp_path / "k.tune.json")
    assert [(e["bucket"], e["ragged"], e["params"], e["options"]) for e in table["entries"]] == [
        ({"M": 1024}, False, {"BLOCK_N": 128}, {"widen": 0, "stages": 3}),  # kept: 1000 ragged
        ({"M": 4096}, False, {"BLOCK_N": 128}, {"widen": 0, "stages": 3}),  # kept
        ({"M": 1024}, True, {}, {"widen": 0}),  # M=1000's own entry (the default won)
    ]
    assert "(1 bucket(s) tuned, 2 kept)" in out and "another version" not in err
    # a ragged size of the bucket gets the ragged entry, an aligned one the other
    assert pick(table, {"M": 1000}) == ({}, {"widen": 0})
    assert pick(table, {"M": 1024}) == ({"BLOCK_N": 128}, {"widen": 0, "stages": 3})
    # tuning M=1000 again replaces its own entry only
    _tune(source, [{"M": 1000}], ["BLOCK_N=128,256", "stages=3"])
    table = load_table(tmp_path / "k.tune.json")
    assert len(table["entries"]) == 3
    # the source changes: the old entries go
    Path(source).write_text("// a kernel, edited\n")
    res, out, err = _tune(source, [{"M": 512}], ["BLOCK_N=128,256", "stages=3"])
    table = load_table(tmp_path / "k.tune.json")
    assert [e["bucket"] for e in table["entries"]] == [{"M": 512}]
    assert res.stale and "was tuned for another version" in err


def test_tune_to_a_given_table_and_unreadable_tables(tmp_path):
    source = _source(tmp_path)
    path = tmp_path / "other.json"
    res, _, _ = _tune(source, [{"M": 64}], ["stages=3"], table_path=path)
    assert res.table_path == path and load_table(path)["entries"][0]["bucket"] == {"M": 64}
    path.write_text("{not json")
    with pytest.raises(CompileError, match="not a tuning table"):
        _tune(source, [{"M": 64}], ["stages=3"], table_path=path)
    with pytest.raises(CompileError, match="table folder .* does not exist"):
        _tune(source, [{"M": 64}], ["stages=3"], table_path=tmp_path / "no" / "t.json")


def test_tune_fails_when_a_size_has_no_correct_candidate(tmp_path):
    source = _source(tmp_path)

    def measure(source, sizes, compiled, *, rep_ms, advance):
        rows = []
        for c in compiled:
            bad = sizes["M"] == 4096
            rows.append(
                Measured(c.candidate, reject="wrong result: NaN in c")
                if bad
                else Measured(c.candidate, time_ms=1.0)
            )
        return Timings("dev", rows)

    with pytest.raises(CompileError, match="no candidate ran correctly at M=4096"):
        _tune(source, [{"M": 1024}, {"M": 4096}], ["stages=3"], measure_fn=measure)
    # the size that has a winner is in the table all the same
    table = load_table(tmp_path / "k.tune.json")
    assert [e["bucket"] for e in table["entries"]] == [{"M": 1024}]


def test_tune_when_nothing_compiles(tmp_path):
    def compile_fn(source, params, options):
        raise CompileError("ptxas not found")

    with pytest.raises(CompileError, match="no candidate compiles; the first error: error: ptxas"):
        _tune(_source(tmp_path), [{"M": 64}], ["stages=3"], compile_fn=compile_fn)


def test_tune_without_sizes_or_with_both_planners(tmp_path):
    with pytest.raises(CompileError, match="at least one --size"):
        _tune(_source(tmp_path), [], ["stages=3"])
    with pytest.raises(CompileError, match="--schedule and --space schedule"):
        _tune(_source(tmp_path), [{"M": 1}], ["schedule=solver"], base_options={"schedule": "x"})


# --------------------------------------------------------------------------- the command line


def test_cli_compile_only_with_a_fake_compiler(tmp_path, monkeypatch):
    monkeypatch.setattr(tn, "compile_candidate", fake_compile)
    source = _source(tmp_path)
    res = CliRunner().invoke(
        cli.main,
        [
            "tune",
            source,
            "--space",
            "BLOCK_N=128,256",
            "--space",
            "stages=3,4",
            "-j",
            "1",
            "--compile-only",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "compiling 5 configurations on 1 worker(s)" in res.output
    assert "compiled 4 (0 from the cache), rejected 1" in res.output
    assert "BLOCK_N=256 stages=4" in res.output and "rejected:" in res.output
    assert not (tmp_path / "k.tune.json").exists()


def test_cli_compile_only_compiles_gemm(tmp_path):
    """The real compiler through the cache and two worker processes; a second run finds
    every kernel in the cache."""
    args = ["tune", str(GEMM), "--space", "BLOCK_N=64,128", "--compile-only", "-j", "2"]
    res = CliRunner().invoke(cli.main, args)
    assert res.exit_code == 0, res.output
    assert "compiled 3 " in res.output and "rejected 0" in res.output
    assert re.search(r"BLOCK_N=64 +│ compiled", res.output), res.output
    res = CliRunner().invoke(cli.main, [*args[:-2], "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "compiled 3 (3 from the cache)" in res.output


def test_cli_needs_a_gpu_without_compile_only(tmp_path, monkeypatch):
    import torch

    def never(*a, **k):
        raise AssertionError("compiled before the GPU check")

    monkeypatch.setattr(tn, "compile_candidate", never)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    res = CliRunner().invoke(
        cli.main, ["tune", str(GEMM), "--size", "M=512,N=512,K=512", "--space", "stages=3"]
    )
    assert res.exit_code == 1, res.output
    assert res.output.strip().splitlines()[-1] == (
        "error: tawac tune needs an NVIDIA Hopper GPU to time candidates; torch sees no CUDA "
        "device (--compile-only compiles the candidates without one)"
    )
    res = CliRunner().invoke(cli.main, ["tune", str(GEMM), "--space", "stages=3"])
    assert res.exit_code == 1
    assert "needs at least one --size" in res.output


def test_cli_bad_space_and_help():
    res = CliRunner().invoke(cli.main, ["tune", str(GEMM), "--space", "stages=x", "--compile-only"])
    assert res.exit_code == 1
    assert res.output.strip() == "error: --space stages: expected an integer, got 'x'"
    res = CliRunner().invoke(cli.main, ["tune", "--help"])
    assert res.exit_code == 0 and "tawac tune examples/gemm.mlir" in res.output


def test_measure_size_checks_against_the_interpreter(monkeypatch):
    """The timing phase on the CPU: the real gemm's sidecar and the interpreter's
    reference, kernels faked by torch (right, wrong, NaN-leaving, unlaunchable)."""
    import torch

    import tawac.runtime.launcher as launcher
    import tawac.runtime.runner as runner

    side = tn.compile_candidate(str(GEMM), {}, {}).sidecar
    assert [a["access"] for a in side["args"]] == ["read", "read", "write"]
    make_args = runner.make_args
    monkeypatch.setattr(runner, "make_args", lambda *a, **k: make_args(*a, **k, device="cpu"))

    def bench_ms(fn, warmup_ms=25.0, rep_ms=100.0):
        fn()
        return 2.0, "fake"

    monkeypatch.setattr(runner, "bench_ms", bench_ms)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "cpu")

    def gemm(a, b, c):
        c.copy_((a.float() @ b.float().T).to(c.dtype))

    def zeros(a, b, c):
        c.zero_()

    def unwritten(a, b, c):
        pass

    kernels = {b"gemm": gemm, b"zeros": zeros, b"unwritten": unwritten}

    def load_kernel(cubin, sidecar):
        if cubin not in kernels:
            raise launcher.LaunchError("too much shared memory for this device")
        return kernels[cubin]

    monkeypatch.setattr(launcher, "load_kernel", load_kernel)
    compiled = [
        Compiled(Candidate(options={"stages": i}), cubin, side)
        for i, cubin in enumerate([b"gemm", b"zeros", b"unwritten", b"other"])
    ]
    ticks = []
    got = tn.measure_size(
        str(GEMM), {"M": 128, "N": 96, "K": 128}, compiled, advance=lambda: ticks.append(1)
    )
    assert got.device == "cpu" and len(ticks) == 4
    ok, zero, nan, launch = got.rows
    assert ok.ok and ok.time_ms == 2.0 and ok.error < 1e-2
    assert ok.tflops == pytest.approx(2 * 128 * 256 * 128 / 2e-3 / 1e12)  # tile-level flops
    assert zero.reject == "wrong result: relative error 1 > 0.02" and zero.time_ms is None
    assert nan.reject == "wrong result: NaN in c"
    assert launch.reject == "launch failed: too much shared memory for this device"


def test_fixed_parameters_apply_to_every_candidate(tmp_path):
    """`-D BLOCK_M=64`: every candidate, the default configuration included, compiles
    with it, the reference too, and the table's entry records it."""
    seen = []

    def compile_fn(source, params, options):
        seen.append(dict(params))
        return fake_compile(source, params, options)

    res, _, _ = _tune(
        _source(tmp_path),
        [{"M": 1024}],
        ["BLOCK_N=128"],
        compile_fn=compile_fn,
        base_params={"BLOCK_M": 64},
        measure_fn=fake_measure({"default": 2.0, "BLOCK_N=128": 1.0}),
    )
    assert seen == [{"BLOCK_M": 64}, {"BLOCK_M": 64, "BLOCK_N": 128}]
    assert res.compiled[0].params == {"BLOCK_M": 64}
    (entry,) = res.table["entries"]
    assert entry["params"] == {"BLOCK_M": 64, "BLOCK_N": 128}
    with pytest.raises(CompileError, match="-D BLOCK_N and --space BLOCK_N=...: give one"):
        _tune(_source(tmp_path), [{"M": 1}], ["BLOCK_N=128"], base_params={"BLOCK_N": 64})


def test_cli_defines(tmp_path, monkeypatch):
    monkeypatch.setattr(tn, "compile_candidate", fake_compile)
    args = ["tune", _source(tmp_path), "--space", "BLOCK_N=128", "--compile-only", "-j", "1"]
    res = CliRunner().invoke(cli.main, [*args, "-D", "BLOCK_M=64"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli.main, [*args, "-D", "BLOCK_M=x"])
    assert res.exit_code == 1
    assert res.output.strip() == "error: parameter BLOCK_M: expected an integer, got 'x'"


def test_shipped_tuning_tables_match_their_examples():
    """examples/*.tune.json (measured with `tawac tune`, read by tawac.torch) are valid,
    tuned for the example's current text, and name only parameters it declares."""
    from tawac.schedule.tuning import load_table, source_sha256
    from tawac.support.params import substitute

    tables = sorted((REPO / "examples").glob("*.tune.json"))
    assert tables, "no tuning tables shipped"
    for path in tables:
        source = path.with_name(path.name.replace(".tune.json", ".mlir"))
        table = load_table(path)
        text = source.read_text()
        assert table["source_sha256"] == source_sha256(text), f"{path} is stale"
        declared = substitute(text, str(source)).values
        for entry in table["entries"]:
            assert set(entry["params"]) <= set(declared), entry


def measure_on_device(source, sizes, compiled, *, rep_ms, advance):
    """A timing function run in a worker process: `TIMES` as `fake_measure`, the device
    name says which worker timed the size."""
    rows = []
    for c in compiled:
        t = TIMES.get(c.candidate.label(), 1.0) * sizes["M"] / 1024
        rows.append(Measured(c.candidate, time_ms=t, tflops=1.0 / t, error=1e-3))
        advance()
    return Timings(f"GPU {os.environ.get('CUDA_VISIBLE_DEVICES')}", rows)


def test_sizes_are_timed_on_every_device(tmp_path):
    """With two devices each size is timed wholly by one worker process (dealt in turn)
    and the results are those of timing them one after another."""
    source = _source(tmp_path)
    sizes = [{"M": 1024}, {"M": 2048}, {"M": 4096}]
    space = ["BLOCK_N=128,256", "stages=3"]
    res, out, err = _tune(source, sizes, space, measure_fn=measure_on_device, devices=2)
    assert [r.device for r in res.sizes] == ["GPU 0", "GPU 1", "GPU 0"]
    assert "on 2 GPUs" in err
    one, _, _ = _tune(source, sizes, space, measure_fn=measure_on_device, devices=1)
    assert [r.winner.candidate.label() for r in res.sizes] == [
        r.winner.candidate.label() for r in one.sizes
    ]


def test_ragged_sizes_are_told_from_aligned_ones():
    from tawac.schedule.tuning import ragged_of

    assert ragged_of({"M": 1000, "N": 1024, "K": 1024})
    assert ragged_of({"M": 3000, "N": 5000, "K": 2000})
    assert not ragged_of({"M": 1024, "N": 4096, "K": 14336})
    assert not ragged_of({"M": 1, "N": 4096, "K": 4096})  # decode rows: not a tile's worth
    assert not ragged_of({"B": 4, "H": 16, "S": 4096, "D": 128})


def test_entries_tuned_at_other_sizes_of_a_bucket_keep_their_own_place():
    """5120^2 x 8192 and 8192^3 share a bucket: an entry tuned at 5120 records its sizes,
    is replaced only by a tuning at the same sizes, and serves the sizes nearest to it;
    the bucket's own entry keeps serving 8192^3."""
    from tawac.schedule.tuning import pick_entry, validate_table

    bucket = {"M": 8192, "N": 8192, "K": 8192}
    own = {"bucket": bucket, "ragged": False, "params": {"BLOCK_N": 256}, "options": {}}
    at_5120 = {
        "bucket": bucket,
        "ragged": False,
        "sizes": {"M": 5120, "N": 5120, "K": 8192},
        "params": {"BLOCK_N": 256},
        "options": {"stream_k": 4},
    }
    head = {"format": 1, "kernel": "gemm", "source_sha256": "0", "args": []}
    table = {**head, "entries": [own, at_5120]}
    validate_table(table)
    assert pick_entry(table, {"M": 8192, "N": 8192, "K": 8192}) is own
    assert pick_entry(table, {"M": 5120, "N": 5120, "K": 8192}) is at_5120
    assert pick_entry(table, {"M": 6000, "N": 5000, "K": 8192}) is at_5120
    assert pick_entry(table, {"M": 7800, "N": 8000, "K": 8192}) is own
    assert tn.entry_key(own) != tn.entry_key(at_5120)
    retuned = {**at_5120, "options": {"stream_k": 2}}
    assert tn.entry_key(retuned) == tn.entry_key(at_5120)
    bad = {**at_5120, "sizes": {"M": 3000, "N": 5120, "K": 8192}}  # 3000 is not in bucket 8192
    with pytest.raises(Exception, match="'sizes' must give"):
        validate_table({**head, "entries": [bad]})


def test_a_candidate_that_spills_is_rejected():
    """ptxas's report of spills rejects a candidate at compile time (a table never ships
    one), with the report's numbers in the diagnostic."""
    report = "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    clean = "ptxas info    :\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"

    def fake(report_text):
        def compile_fn(source, params, options):
            return SimpleNamespace(cubin=b"\x7fELF", sidecar={}, ptxas_report=report_text)

        return compile_fn

    cand = Candidate(params={"BLOCK_N": 128}, options={})
    bad = tn.compile_job(fake(report), "k.mlir", cand, {})
    assert bad.error == "ptxas spills registers (4 bytes spill stores)"
    good = tn.compile_job(fake(clean), "k.mlir", cand, {})
    assert good.error is None and good.cubin == b"\x7fELF"


def test_tune_with_a_clean_l2_times_that_way_and_records_it(tmp_path):
    """`--l2 clean` reaches the timing function (every size) and the table's entries say
    so; the default records nothing (the entries of older tables read as dirty)."""
    source = _source(tmp_path)
    seen = []

    def measure(source, sizes, compiled, *, rep_ms, advance, l2="dirty"):
        seen.append(l2)
        return fake_measure(TIMES)(source, sizes, compiled, rep_ms=rep_ms, advance=advance)

    sizes = [{"M": 1024}, {"M": 4096}]
    res, _, _ = _tune(source, sizes, ["stages=3"], measure_fn=measure, l2="clean")
    assert seen == ["clean", "clean"]
    assert [e["l2"] for e in load_table(res.table_path)["entries"]] == ["clean", "clean"]
    res, _, _ = _tune(source, [{"M": 1024}], ["stages=3"], measure_fn=measure)
    assert seen[-1] == "dirty"
    entries = load_table(res.table_path)["entries"]
    assert "l2" not in entries[0] and entries[1]["l2"] == "clean"
    with pytest.raises(CompileError, match="--l2 'warm'"):
        _tune(source, [{"M": 1024}], ["stages=3"], measure_fn=measure, l2="warm")


def test_tune_rounds_reach_the_timing_function(tmp_path):
    """`--rounds N` reaches the timing function; fewer than 1 is an error, and the CLI
    refuses it too."""
    source = _source(tmp_path)
    seen = []

    def measure(source, sizes, compiled, *, rep_ms, advance, rounds=3):
        seen.append(rounds)
        return fake_measure(TIMES)(source, sizes, compiled, rep_ms=rep_ms, advance=advance)

    _tune(source, [{"M": 1024}], ["stages=3"], measure_fn=measure, rounds=7)
    _tune(source, [{"M": 1024}], ["stages=3"], measure_fn=measure)
    assert seen == [7, 3]
    with pytest.raises(CompileError, match="--rounds 0"):
        _tune(source, [{"M": 1024}], ["stages=3"], measure_fn=measure, rounds=0)
    res = CliRunner().invoke(cli.main, ["tune", str(source), "--rounds", "0", "--compile-only"])
    assert res.exit_code != 0 and "--rounds" in res.output
