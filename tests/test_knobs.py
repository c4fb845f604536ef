"""The pipeline knobs are declared once (`tawac.support.options.KNOBS`): the options, the `plan`
pass's options, `plan_spec`, the command line's flags, `tune --space` and the checks of
each value all follow the table, with one spelling per knob."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from tawac.driver import make_pipeline
from tawac.passes.plan import PlanPass
from tawac.support.diagnostics import CompileError
from tawac.support.options import CLUSTERS, KNOBS, Knob, PipelineOptions, knob
from tawac.tools import cli

ROOT = Path(__file__).resolve().parent.parent
GEMM = ROOT / "examples" / "gemm.mlir"


def _other_value(k: Knob):
    """A value of `k` other than its default, one it takes."""
    if k.type is bool:
        return not k.default
    if k.choices:
        return next(c for c in k.choices if c != k.default)
    return k.default + 1 if k.max is None or k.default < k.max else k.default - 1


def test_one_spelling_per_knob():
    names = [k.name for k in KNOBS]
    assert len(set(names)) == len(names)
    for k in KNOBS:
        assert k.name.isidentifier() and k.name == k.name.lower(), k.name
        assert k.option == k.name.replace("_", "-")
        assert knob(k.option) is k and knob(k.name) is k
        assert k.problem(k.default) is None, k.name
    assert [f.name for f in dataclasses.fields(PipelineOptions)] == names
    assert [f.name for f in dataclasses.fields(PlanPass)] == names
    assert PipelineOptions().plan_spec().startswith("plan{schedule=")
    # the old spellings are gone
    for spec in ("plan{warp-groups=1}", "plan{planner=solver}"):
        with pytest.raises(CompileError, match="invalid pass pipeline"):
            make_pipeline(spec)


def test_table_facts_match_the_target_and_the_planners():
    from tawac.schedule.registry import get_planner
    from tawac.target import HOPPER

    assert knob("consumer_warp_groups").max == HOPPER.max_consumer_warp_groups
    assert knob("cluster").choices == tuple(CLUSTERS)
    for name in knob("schedule").choices:
        assert get_planner(name).name == name


@pytest.mark.parametrize("k", KNOBS, ids=lambda k: k.name)
def test_every_knob_round_trips_through_the_plan_pass(k, monkeypatch):
    """A non-default value: PipelineOptions -> plan_spec() -> `tawac opt -p` parsing ->
    the plan pass's options, unchanged."""
    options = PipelineOptions(**{k.name: _other_value(k)})
    spec = options.plan_spec()
    assert f"{k.option}={k.spell(_other_value(k))}" in spec
    (plan,) = make_pipeline(spec).passes
    assert getattr(plan, k.name) == _other_value(k)
    assert plan.options() == options
    seen = []
    monkeypatch.setattr(PlanPass, "apply", lambda self, ctx, op: seen.append(self.options()))
    res = CliRunner().invoke(cli.main, ["opt", str(GEMM), "-p", spec])
    assert res.exit_code == 0, res.output
    assert seen == [options]


@pytest.mark.parametrize("command", ["compile", "run", "explain"])
def test_every_knob_is_a_flag(command):
    cmd = cli.main.commands[command]
    params = {p.name: p for p in cmd.params}
    head = {"compile": ["k.mlir", "-o", "k.ptx"], "run": ["k.mlir", "--size", "M=1"]}
    for k in KNOBS:
        assert params[k.name].help == k.help
        value = _other_value(k)
        flag = [f"--{'no-' if value is False else ''}{k.option}"]
        args = flag if k.type is bool else [*flag, k.spell(value)]
        ctx = cmd.make_context(command, [*head.get(command, ["k.mlir"]), *args])
        assert ctx.params[k.name] == value, k.name
        assert PipelineOptions(**{n: ctx.params[n] for n in (x.name for x in KNOBS)}) == (
            PipelineOptions(**{k.name: value})
        )


@pytest.mark.parametrize(
    "options,message",
    [
        (
            {"consumer_warp_groups": 4},
            "cooperative-consumers: consumer-warp-groups must be 0..3, got 4",
        ),
        ({"group_m": -1}, "persistent: group-m must be >= 0, got -1"),
        ({"stages": -1}, "pipeline: stages must be >= 0, got -1"),
        ({"mma_depth": -1}, "pipeline: mma-depth must be >= 0, got -1"),
        ({"cluster": "3x1"}, "plan: cluster must be one of 1x1, 2x1, 1x2, got '3x1'"),
        (
            {"schedule": "magic"},
            "plan: schedule must be one of heuristic, solver, auto, got 'magic'",
        ),
        ({"persistent": 1}, "plan: persistent must be true or false, got 1"),
        ({"stages": True}, "pipeline: stages must be an integer, got true"),
        ({"cluster": 2}, "plan: cluster must be a string, got 2"),
    ],
)
def test_checks_follow_the_table(options, message):
    with pytest.raises(CompileError) as e:
        PipelineOptions(**options).check()
    assert str(e.value) == f"error: {message}"


def test_options_import_no_xdsl():
    """The CLI reads the table at start-up: tawac.support.options stays free of xDSL."""
    code = (
        "import sys, tawac.support.options; print(sorted({m for m in sys.modules if 'xdsl' in m}))"
    )
    # a process: what a fresh interpreter imports with the table is the subject
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# The whole diff that adding a knob takes (tawac/support/options.py, one row of KNOBS):
NEW_ROW = """\
    Knob("probe_depth", int, 2, "a knob added by a test", min=1, max=4),
"""

# A child process whose tawac.support.options is the real one plus NEW_ROW; nothing else edited.
CHILD = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pathlib import Path
    import tawac

    src = (Path(tawac.__file__).parent / "support" / "options.py").read_text()
    anchor = "KNOBS: tuple[Knob, ...] = (\\n"
    assert src.count(anchor) == 1
    spec = importlib.util.spec_from_loader("tawac.support.options", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = str(Path(tawac.__file__).parent / "support" / "options.py")
    sys.modules["tawac.support.options"] = mod
    exec(compile(src.replace(anchor, anchor + sys.argv[1]), mod.__file__, "exec"), mod.__dict__)

    import dataclasses
    from click.testing import CliRunner
    from tawac.tools import cli, tune
    from tawac.driver import make_pipeline
    from tawac.support.options import PipelineOptions
    from tawac.passes.plan import PlanPass
    from tawac.schedule.planner import HeuristicPlanner

    out = {}
    out["options_field"] = [
        (f.name, f.type.__name__) for f in dataclasses.fields(PipelineOptions)
        if f.name == "probe_depth"
    ]
    out["default"] = PipelineOptions().probe_depth
    out["spec"] = PipelineOptions(probe_depth=3).plan_spec()
    out["pass_fields"] = [f.name for f in dataclasses.fields(PlanPass) if f.name == "probe_depth"]
    (plan,) = make_pipeline("plan{probe-depth=4}").passes
    out["parsed"] = plan.options().probe_depth
    out["help"] = {
        c: "--probe-depth INTEGER a knob added by a test"
        in " ".join(CliRunner().invoke(cli.main, [c, "--help"]).output.split())
        for c in ("compile", "run", "explain")
    }
    out["space"] = [list(a.values) for a in tune.parse_space(["probe-depth=1,3"])]
    import tawac.torch
    out["torch"] = "probe_depth" in tawac.torch.OPTION_NAMES

    # the planner receives the flag's value; a value out of range is one error line
    seen = []
    plan_fn = HeuristicPlanner.plan
    def spy(self, kernel, options):
        seen.append(options.probe_depth)
        return plan_fn(self, kernel, options)
    HeuristicPlanner.plan = spy
    res = CliRunner().invoke(cli.main, ["explain", sys.argv[2], "--probe-depth", "3", "--json"])
    out["explain"] = [res.exit_code, list(seen)]
    res = CliRunner().invoke(cli.main, ["explain", sys.argv[2], "--probe-depth", "9"])
    out["error"] = [res.exit_code, res.output.strip()]
    print(json.dumps(out))
    """
)


def test_adding_a_knob_touches_one_table():
    """One row added to KNOBS (NEW_ROW) gives the options field, the plan pass's option,
    `plan_spec`, the flag of compile, run and explain, a `tune --space` name, a
    `tawac.torch` keyword and the range check; the planner gets the value."""
    # a process: the child imports the whole compiler over an edited options module (the
    # KNOBS table is read when each module imports it), which this process cannot undo
    res = subprocess.run(
        [sys.executable, "-c", CHILD, NEW_ROW, str(GEMM)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["options_field"] == [["probe_depth", "int"]]
    assert out["default"] == 2
    assert "probe-depth=3" in out["spec"]
    assert out["pass_fields"] == ["probe_depth"]
    assert out["parsed"] == 4
    assert out["help"] == {"compile": True, "run": True, "explain": True}
    assert out["space"] == [[1, 3]]
    assert out["torch"] is True
    assert out["explain"] == [0, [3]]
    assert out["error"] == [1, "error: plan: probe-depth must be 1..4, got 9"]


def test_tuning_tables_hold_knobs():
    """A tuning table's options are knobs by their Python names, with values they take;
    the shipped tables are."""
    from tawac.schedule import tuning

    for path in sorted((ROOT / "examples").glob("*.tune.json")):
        tuning.load_table(path)
    entry = {"bucket": {"M": 1024}, "params": {}, "options": {"schedule": "solver"}}
    table = {"format": 1, "kernel": "k", "source_sha256": "", "args": [], "entries": [entry]}
    tuning.validate_table(table)
    for options, message in [
        ({"planner": "solver"}, "entries[0]: unknown option 'planner' (options: schedule, "),
        ({"mma-depth": 1}, "entries[0]: unknown option 'mma-depth'"),
        ({"stages": "3"}, "entries[0]: option stages must be an integer, got '3'"),
        ({"cluster": "4x1"}, "entries[0]: option cluster must be one of 1x1, 2x1, 1x2, got '4x1'"),
    ]:
        entry["options"] = options
        with pytest.raises(tuning.TuningTableError) as e:
            tuning.validate_table(table)
        assert message in str(e.value)
