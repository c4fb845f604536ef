"""The auto planner (`--schedule auto`): the kinds of loop its fallback is kept by, the
choice between the two planners' proposals (the model's where its margin is at least its
error, else the target's preference), the decision recorded in `#tawac.schedule` and
shown by `tawac explain`, and what happens when a planner proposes nothing."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from cli_inprocess import tawac
from xdsl.dialects import scf
from xdsl.printer import Printer

from tawac import schedule
from tawac.analysis.kinds import KINDS, kernel_kind
from tawac.dialects import tile
from tawac.dialects.schedule import AutoInfo, Schedule
from tawac.driver import parse_text, run_pipeline
from tawac.ir.parser import parse_file
from tawac.schedule import auto, registry, solver
from tawac.schedule.auto import AutoPlanner, Proposal, choose
from tawac.schedule.model import model_intervals
from tawac.schedule.planner import complete
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions, knob
from tawac.target import HOPPER, Target
from tawac.tools.explain import explain_module, planner_text

#: The model's error in percent as `auto` records it for a gemm loop (the shipped
#: calibration's error in comparing the two planners' gemm schedules, else its median).
ERR = round(100 * HOPPER.model_error_for("gemm"), 1)
#: A solver price whose margin over a heuristic price of 1000 lies within that error.
WITHIN = 1000.0 - 10 * ERR / 2
HALF = round(ERR / 2, 1)
#: The table's preference (the heuristic for every kind), whatever the calibration measured.
TABLE_PREFERENCE = Target().planner_preference

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def _kernel(path: Path, passes: str = "warp-specialize") -> tile.KernelOp:
    module = parse_file(path)
    run_pipeline(module, passes)
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _priced(monkeypatch, heuristic: float | None, solver_cost: float | None) -> None:
    """The model prices the heuristic's proposal `heuristic` cycles and the solver's
    `solver_cost` (whatever the schedules are)."""
    costs = {"heuristic": heuristic, "solver": solver_cost}
    monkeypatch.setattr(auto, "cost", lambda kernel, s: costs[s.planner])


def _auto(path: Path = EXAMPLES / "gemm.mlir", **target) -> Schedule:
    planner = AutoPlanner(dataclasses.replace(HOPPER, **target))
    return planner.plan(_kernel(path), PipelineOptions(schedule="auto"))


# -- kinds and the target's preference -----------------------------------------------------


@pytest.mark.parametrize(
    "path,kind",
    [
        (EXAMPLES / "gemm.mlir", "gemm"),
        (EXAMPLES / "gemm_fp8.mlir", "gemm"),
        (REPO / "tests/data/variants/two_dots_per_step_relu.mlir", "gemm"),
        (REPO / "tests/data/variants/two_accumulators.mlir", "gemm"),
        (REPO / "tests/data/chained_gemm.mlir", "gemm"),  # the second dot is after the loop
        (EXAMPLES / "attention.mlir", "attention"),
        (EXAMPLES / "attention_causal_d64.mlir", "attention-narrow"),
        (REPO / "tests/data/attention_bias.mlir", "attention"),
        (REPO / "corpus/mlp_b2b.mlir", "chained"),
        (REPO / "tests/data/single_k_tile.mlir", "other"),  # no main loop
    ],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_kernel_kind(path, kind):
    assert kernel_kind(_kernel(path)) == kind


def test_attention_with_narrow_heads_is_a_kind_of_its_own():
    """On several consumer warp groups, attention whose MMAs take the tensor core no
    longer than its exponentials take the MUFU (head dim 64 at bf16: 128 multiply-adds
    per exponential, the H100's 2048 per cycle over 16) is `attention-narrow`; head dim
    128 is `attention`; the target's rates decide, and one warp group is `attention-1wg`
    either way."""
    from tawac.analysis.kinds import narrow

    d64 = _kernel(EXAMPLES / "attention_d64.mlir")
    d128 = _kernel(EXAMPLES / "attention.mlir")
    assert kernel_kind(d64, 2) == kernel_kind(d64) == "attention-narrow"
    assert kernel_kind(d64, 1) == "attention-1wg"
    assert kernel_kind(d128, 2) == "attention"
    (loop,) = [o for o in d128.walk() if isinstance(o, scf.ForOp) and _has_exp(o)][:1]
    ex2 = HOPPER.cost("ex2.approx.ftz.f32")
    slow_mufu = dataclasses.replace(
        HOPPER,
        costs=tuple(dataclasses.replace(c, throughput=8) if c is ex2 else c for c in HOPPER.costs),
    )
    assert not narrow(loop.body.block)
    assert narrow(loop.body.block, slow_mufu)


def test_tile_exponentials_are_those_of_2d_tiles():
    """The softmax's `exp2` of the scores counts (the solver's order constraint and
    `narrow` read it); a row vector's or a scalar's does not, and a scalar's is no
    error."""
    from xdsl.dialects import math
    from xdsl.dialects.builtin import f32
    from xdsl.ir import Block

    from tawac.analysis.kinds import tile_exponentials

    d128 = _kernel(EXAMPLES / "attention.mlir")
    (loop,) = [o for o in d128.walk() if isinstance(o, scf.ForOp) and _has_exp(o)][:1]
    found = [o for top in loop.body.block.ops for o in tile_exponentials(top)]
    assert [o.result.type.get_shape() for o in found] == [(128, 128)]
    assert len([o for o in loop.walk() if isinstance(o, math.Exp2Op)]) == 2  # and alpha's
    scalar = math.Exp2Op(Block(arg_types=[f32]).args[0])
    assert tile_exponentials(scalar) == []


def _has_exp(loop) -> bool:
    from xdsl.dialects import math

    return any(isinstance(o, math.Exp2Op) for o in loop.walk())


def test_attention_on_one_consumer_warp_group_is_a_kind_of_its_own():
    """64-row query blocks give one consumer warp group: `attention-1wg` (the two
    planners' schedules of it measure differently from those on several, docs/perf.md);
    a GEMM stays a GEMM; the schedule's warp groups decide (`schedule_kind`)."""
    from tawac.analysis.kinds import schedule_kind

    attention = _kernel(EXAMPLES / "attention.mlir")
    assert kernel_kind(attention, 1) == "attention-1wg"
    assert kernel_kind(attention, 2) == kernel_kind(attention) == "attention"
    assert kernel_kind(_kernel(EXAMPLES / "gemm.mlir"), 1) == "gemm"
    path = EXAMPLES / "attention.mlir"
    module = parse_text(path.read_text(), path.name, params={"BLOCK_M": 64, "BLOCK_N": 64})
    run_pipeline(module, PipelineOptions(widen=1).pipeline(stop="pipeline"))
    (k,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
    assert schedule.of(k).role("consumer").warp_groups == 1
    assert schedule_kind(k, schedule.of(k)) == "attention-1wg"


def test_every_kind_has_a_preference():
    """The target names a planner for every kind, a known one: the heuristic, but where
    the shipped calibration measured the solver's schedules faster (docs/perf.md); the
    model error is the shipped calibration's median error (0.10 uncalibrated)."""
    import json

    from tawac.target.calibration import SHIPPED

    assert [k for k, _ in HOPPER.planner_preference] == list(KINDS)
    shipped = json.loads(SHIPPED.read_text())
    measured = shipped.get("planner_preference", {}) if HOPPER.calibration else {}
    assert {k: HOPPER.preferred_planner(k) for k in KINDS} == {
        k: measured.get(k, "heuristic") for k in KINDS
    }
    assert {p for _, p in Target().planner_preference} == {"heuristic"}
    fitted = shipped["fit"]["median_error"]
    assert HOPPER.model_error == (fitted if HOPPER.calibration else 0.10)
    with pytest.raises(KeyError, match="no planner preference for 'sparse'"):
        HOPPER.preferred_planner("sparse")


def test_registry_and_knob(monkeypatch):
    """`auto` is a planner by name and the `schedule` knob's default."""
    monkeypatch.delenv("TAWAC_SCHEDULE", raising=False)
    assert registry.NAMES == knob("schedule").choices
    assert isinstance(registry.get_planner("auto"), AutoPlanner)
    assert knob("schedule").default == PipelineOptions().schedule == "auto"
    assert "plan{schedule=auto " in PipelineOptions(schedule="auto").pipeline()


# -- the choice ----------------------------------------------------------------------------


def _two(heuristic: float | None, solver_cost: float | None) -> list[Proposal]:
    return [
        Proposal("heuristic", Schedule(planner="heuristic"), heuristic),
        Proposal("solver", Schedule(planner="solver"), solver_cost),
    ]


def test_choose_the_model_where_the_margin_is_large():
    chosen, info = choose(_two(1000.0, 800.0), "gemm")
    assert chosen.planner == "solver"
    assert info == AutoInfo("solver", "model", faster="solver", margin=20.0, error=ERR)
    chosen, info = choose(_two(700.0, 1000.0), "attention")
    assert (chosen.planner, info.rule, info.margin) == ("heuristic", "model", 30.0)
    # exactly the model's error is enough
    assert choose(_two(1000.0, 1000.0 - 10 * ERR), "gemm")[1].rule == "model"


def test_choose_the_preference_within_the_error():
    table = dataclasses.replace(HOPPER, planner_preference=TABLE_PREFERENCE)
    chosen, info = choose(_two(1000.0, WITHIN), "gemm", table)
    assert chosen.planner == "heuristic"
    assert info == AutoInfo(
        "heuristic", "preferred", kind="gemm", faster="solver", margin=HALF, error=ERR
    )
    prefers_solver = dataclasses.replace(
        HOPPER, planner_preference=(("gemm", "solver"), ("attention", "heuristic"))
    )
    assert choose(_two(1000.0, WITHIN), "gemm", prefers_solver)[0].planner == "solver"
    assert choose(_two(1000.0, WITHIN), "attention", prefers_solver)[0].planner == "heuristic"
    # a smaller model error lets the model decide
    sharper = dataclasses.replace(HOPPER, model_error=HOPPER.model_error / 4, planner_errors=())
    assert choose(_two(1000.0, WITHIN), "gemm", sharper)[1].rule == "model"
    # nothing priced: the preference, saying so
    _, unpriced = choose(_two(None, None), "other")
    assert (unpriced.rule, unpriced.margin, unpriced.error) == ("preferred", None, None)
    _, half = choose(_two(1000.0, None), "gemm")
    assert (half.rule, half.margin) == ("preferred", None)


def test_the_heuristic_is_kept_where_the_solver_is_not_priced_cheaper():
    """The preferences are measured on the solver planner's builds, which differ from the
    heuristic's only where the model prices the solver's schedule more than `MARGIN`
    cheaper: elsewhere (a tie, the solver's barely cheaper, or the heuristic's cheaper
    within the model's error) auto keeps the heuristic's schedule, whatever the kind
    prefers (docs/perf/2026-11-26.md, eighth part)."""
    from tawac.schedule.auto import TIE_MARGIN, decide

    assert TIE_MARGIN == 100 * solver.MARGIN == 2.0
    prefers_solver = dataclasses.replace(HOPPER, planner_preference=(("gemm", "solver"),))
    _, tie = choose(_two(1000.0, 1000.0), "gemm", prefers_solver)
    assert tie == AutoInfo("heuristic", "kept", margin=0.0, error=ERR)
    chosen, barely = choose(_two(1000.0, 990.0), "gemm", prefers_solver)
    assert chosen.planner == "heuristic"
    assert barely == AutoInfo("heuristic", "kept", faster="solver", margin=1.0, error=ERR)
    chosen, dearer = choose(_two(1000.0, 1000.0 / (1 - HALF / 100)), "gemm", prefers_solver)
    assert (chosen.planner, dearer.rule, dearer.faster) == ("heuristic", "kept", "heuristic")
    chosen, within = choose(_two(1000.0, WITHIN), "gemm", prefers_solver)
    assert (chosen.planner, within.rule) == ("solver", "preferred")
    # the rule on the figures alone, as the calibration replays it
    assert decide(25.0, "solver", 20.0, "heuristic") == ("model", "solver")
    assert decide(25.0, "heuristic", 20.0, "solver") == ("model", "heuristic")
    assert decide(15.0, "heuristic", 20.0, "solver") == ("kept", "heuristic")
    assert decide(1.9, "solver", 20.0, "solver") == ("kept", "heuristic")
    assert decide(2.0, "solver", 20.0, "solver") == ("preferred", "solver")
    assert decide(15.0, "solver", 20.0, "heuristic") == ("preferred", "heuristic")
    assert decide(None, "heuristic", 20.0, "solver") == ("preferred", "solver")


def test_a_kind_with_a_measured_planner_error_needs_a_larger_margin():
    """Where the calibration measured the model's error in comparing the two planners'
    schedules of a kind of loop (`planner_errors`), a margin must exceed that, not the
    median error: 15% decides a gemm loop but not an attention loop measured at 19%."""
    t = dataclasses.replace(HOPPER, model_error=0.03, planner_errors=(("attention", 0.19),))
    assert t.model_error_for("attention") == 0.19 and t.model_error_for("gemm") == 0.03
    _, gemm = choose(_two(1000.0, 850.0), "gemm", t)
    assert (gemm.rule, gemm.chosen, gemm.error) == ("model", "solver", 3.0)
    _, att = choose(_two(1000.0, 850.0), "attention", t)
    assert (att.rule, att.chosen, att.margin, att.error) == ("preferred", "heuristic", 15.0, 19.0)
    assert choose(_two(1000.0, 800.0), "attention", t)[1].rule == "model"


def test_auto_plans_the_model_choice(monkeypatch):
    """The planner: the solver's proposal where the model prices it 20% cheaper (the
    schedule keeps its `solve`), the heuristic's (preferred for gemm) at half the model's
    error, and the solver's again there where the target prefers it or its model error is
    a quarter."""
    _priced(monkeypatch, 1000.0, 800.0)
    s = _auto()
    assert s.planner == "auto" and s.auto is not None
    assert (s.auto.chosen, s.auto.rule, s.auto.margin) == ("solver", "model", 20.0)
    _priced(monkeypatch, 1000.0, WITHIN)
    s = _auto(planner_preference=TABLE_PREFERENCE)
    assert s.auto == AutoInfo(
        "heuristic", "preferred", kind="gemm", faster="solver", margin=HALF, error=ERR
    )
    assert s.solve is None
    kernel = _kernel(EXAMPLES / "gemm.mlir")
    heuristic = registry.get_planner("heuristic").plan(kernel, PipelineOptions())
    assert s == complete(kernel, heuristic, PipelineOptions())
    preference = tuple((k, "solver" if k == "gemm" else "heuristic") for k in KINDS)
    assert _auto(planner_preference=preference).auto.chosen == "solver"
    assert _auto(model_error=HOPPER.model_error / 4, planner_errors=()).auto.rule == "model"


def test_costs_are_the_model_intervals():
    """The price of a proposal is the sum of its consumer main loops' simulated steady
    state (one loop in the GEMM); a kernel without a main loop is not priced."""
    kernel = _kernel(EXAMPLES / "gemm.mlir")
    options = PipelineOptions()
    s = complete(kernel, registry.get_planner("heuristic").plan(kernel, options), options)
    (ii,) = model_intervals(kernel, s)
    assert auto.cost(kernel, s) == ii > 0
    single = _kernel(REPO / "tests/data/single_k_tile.mlir")
    plain = registry.get_planner("heuristic").plan(single, options)
    assert auto.cost(single, plain) is None


# -- when a planner fails --------------------------------------------------------------------


def test_a_failing_solver_leaves_the_heuristic(monkeypatch):
    """The solver raising (no OR-Tools, no schedule found) or proposing a schedule the
    kernel cannot realize: auto takes the heuristic's and says why."""

    def missing(self, kernel, options, base=None):
        raise CompileError("plan: the solver planner needs OR-Tools (pip install 'tawac[solver]')")

    monkeypatch.setattr(solver.SolverPlanner, "propose", missing)
    s = _auto()
    assert s.auto == AutoInfo(
        "heuristic",
        "only",
        failed="solver",
        why="plan: the solver planner needs OR-Tools (pip install 'tawac[solver]')",
    )
    assert s.roles and s.planner == "auto"

    def unrealizable(self, kernel, options, base=None):
        return dataclasses.replace(base, roles=base.roles[:1], planner="solver")

    monkeypatch.setattr(solver.SolverPlanner, "propose", unrealizable)
    s = _auto()
    assert (s.auto.chosen, s.auto.rule, s.auto.failed) == ("heuristic", "only", "solver")
    assert "are not the kernel's partitions" in s.auto.why


def test_a_failing_heuristic_is_the_kernels_error():
    """The solver starts from the heuristic's decisions: an error of the heuristic's is
    the error of the compilation."""
    module = parse_file(EXAMPLES / "gemm.mlir")
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    with pytest.raises(CompileError, match="run warp-specialize first"):
        AutoPlanner().plan(kernel, PipelineOptions(schedule="auto"))


# -- the record ------------------------------------------------------------------------------


def _printed(kernel: tile.KernelOp) -> str:
    buf = io.StringIO()
    Printer(stream=buf).print_op(kernel.parent_op())
    return buf.getvalue()


@pytest.mark.parametrize(
    "info",
    [
        AutoInfo("solver", "model", faster="solver", margin=21.7, error=ERR),
        AutoInfo("heuristic", "preferred", kind="gemm", faster="solver", margin=3.1, error=ERR),
        AutoInfo("heuristic", "preferred", kind="gemm", margin=0.0, error=ERR),
        AutoInfo("heuristic", "preferred", kind="other"),
        AutoInfo("heuristic", "kept", margin=0.0, error=ERR),
        AutoInfo("heuristic", "kept", faster="heuristic", margin=7.3, error=ERR),
        AutoInfo("heuristic", "only", failed="solver", why='plan: no "schedule" \\ found'),
    ],
    ids=lambda i: i.rule,
)
def test_the_decision_round_trips(info):
    """`auto = ...` prints and parses back, and prints the same again."""
    kernel = _kernel(EXAMPLES / "gemm.mlir", "warp-specialize,plan{schedule=heuristic}")
    plan = dataclasses.replace(schedule.of(kernel), planner="auto", auto=info)
    schedule.record(kernel, plan)
    text = _printed(kernel)
    assert "#tawac.schedule<planner = auto, auto = " in text
    again = parse_text(text, "<test>")
    k2 = next(o for o in again.walk() if isinstance(o, tile.KernelOp))
    assert schedule.of(k2).auto == info
    assert schedule.of(k2) == plan
    assert _printed(k2) == text


def test_other_planners_print_no_decision():
    kernel = _kernel(EXAMPLES / "gemm.mlir", "warp-specialize,plan{schedule=heuristic}")
    assert schedule.of(kernel).auto is None
    assert "auto =" not in _printed(kernel)


@pytest.mark.parametrize(
    "text,message",
    [
        ("auto = solver maybe", "expected one of model, preferred, kept, only"),
        ("auto = heuristic preferred", "a kind of loop"),
        ("auto = solver model margin 3", "float"),
    ],
)
def test_bad_decisions_are_parse_errors(text, message):
    kernel = _kernel(EXAMPLES / "gemm.mlir", "warp-specialize,plan{schedule=heuristic}")
    source = _printed(kernel).replace("planner = heuristic", f"planner = auto, {text}")
    with pytest.raises(CompileError, match=message):
        parse_text(source, "<test>")


# -- explain ---------------------------------------------------------------------------------


def test_explain_says_which_planner_won(monkeypatch):
    _priced(monkeypatch, 1000.0, 800.0)
    info = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(schedule="auto"))
    assert info["planner"] == "auto"
    assert info["auto"]["chosen"] == "solver"
    assert planner_text(info) == f"auto -> solver (model: 20.0% faster; its error {ERR}%)"
    _priced(monkeypatch, 1000.0, WITHIN)
    info = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(schedule="auto"))
    pref = HOPPER.preferred_planner("gemm")
    assert planner_text(info) == (
        f"auto -> {pref} (preferred for gemm loops; model: solver {HALF}% faster, within "
        f"its error {ERR}%)"
    )
    heuristic = explain_module(
        parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(schedule="heuristic")
    )
    assert "auto" not in heuristic and planner_text(heuristic) == "heuristic"
    only = {"planner": "auto", "auto": dataclasses.asdict(AutoInfo("heuristic", "only"))}
    only["auto"].update(failed="solver", why="plan: no OR-Tools")
    assert planner_text(only) == "auto -> heuristic (solver proposed nothing: plan: no OR-Tools)"
    tie = {"planner": "auto", "auto": dataclasses.asdict(AutoInfo("heuristic", "preferred"))}
    tie["auto"].update(kind="gemm", margin=0.0, error=ERR)
    assert planner_text(tie) == "auto -> heuristic (preferred for gemm loops; model: a tie)"
    kept = {"planner": "auto", "auto": dataclasses.asdict(AutoInfo("heuristic", "kept"))}
    kept["auto"].update(margin=0.0, error=ERR)
    assert planner_text(kept) == "auto -> heuristic (kept: the model prices both alike)"
    kept["auto"].update(faster="heuristic", margin=7.3)
    assert planner_text(kept) == (
        f"auto -> heuristic (kept: the model prices the heuristic's 7.3% faster, within its "
        f"error {ERR}%)"
    )


@pytest.mark.solver
def test_explain_command_line():
    """`tawac explain --schedule auto` prints the decision (the GEMM example: both
    planners' schedules simulate alike, the heuristic's is preferred)."""
    cmd = ["explain", str(EXAMPLES / "gemm.mlir")]
    out = tawac([*cmd, "--schedule", "auto"], check=True).stdout
    assert "planner: auto -> heuristic (kept: the model prices both alike)" in out
