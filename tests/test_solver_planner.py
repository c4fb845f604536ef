"""The solver planner (`--schedule solver`, Twill): the problem it builds from a kernel,
the structure of the schedules it finds, its disk cache, and its errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inprocess import tawac
from xdsl.dialects import math

from tawac import schedule
from tawac.analysis.loops import scheduled_ops
from tawac.dialects import tile
from tawac.driver import run_pipeline
from tawac.ir.parser import parse_file, parse_text
from tawac.schedule import modulo, solver
from tawac.schedule.model import loop_lanes
from tawac.schedule.planner import HeuristicPlanner
from tawac.schedule.simulate import simulate
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.target import HOPPER, Target

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def _kernel(example: str, passes: str = "warp-specialize") -> tile.KernelOp:
    module = parse_file(EXAMPLES / example)
    run_pipeline(module, passes)
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _plan(example: str, **options) -> tuple[tile.KernelOp, schedule.Schedule]:
    kernel = _kernel(example)
    plan = solver.SolverPlanner().plan(kernel, PipelineOptions(schedule="solver", **options))
    return kernel, plan


def _propose(example: str, **options) -> tuple[tile.KernelOp, schedule.Schedule]:
    kernel = _kernel(example)
    found = solver.SolverPlanner().propose(kernel, PipelineOptions(schedule="solver", **options))
    return kernel, found


@pytest.fixture(scope="module")
def attention():
    return _propose("attention.mlir")


def test_problem_of_attention():
    """The consumer's nodes are the timeline model's steps; the producer's are frozen;
    the K and V rings are the empty barriers' distances; every MMA awaited in the loop
    drains within its body; a slot's get shares the stage of its readers."""
    kernel = _kernel("attention.mlir")
    options = PipelineOptions()
    base = HeuristicPlanner().plan(kernel, options)
    built = solver.problem(kernel, base, 2, options)
    p = built.problem
    consumer = [n for n in p.nodes if n.groups == ("consumer",)]
    producer = [n for n in p.nodes if n.groups == ("producer",)]
    assert all(n.frozen for n in producer) and not any(n.frozen for n in consumer)
    assert [n.unit for n in consumer].count("tensor") == 2
    assert all(n.drain for n in consumer if n.unit == "tensor")
    assert {r.name for r in p.rings} == {"aref1", "aref2"}
    assert {e.ring for e in p.edges if e.ring is not None} == {"aref1", "aref2"}
    # two consumer warp groups in lockstep: the tensor core serves both shares (two
    # 64x128x128 MMAs, 512 cycles each plus the model's per-group overhead) and a
    # share's result may come one share later
    assert p.groups[1].copies == 1 and p.groups[1].regs == 240
    dot = next(n for n in consumer if n.unit == "tensor")
    share = 512 + HOPPER.mma_group_cycles
    assert (dot.occupancy, dot.latency) == pytest.approx((2 * share, 54 + 2 * share))
    gets = [i for i, n in enumerate(p.nodes) if n.name.startswith("consumer: get")]
    assert {a for a, _ in p.same_stage} == set(gets)
    # the accumulator O is carried once already (an iteration argument): pipelining
    # only pays for what it adds
    o = next(v for v in p.values if any(d == 1 for _, d in v.uses) and v.regs == 64)
    assert o.producer == next(i for i, n in enumerate(p.nodes) if n.name.endswith("%acc_new dot"))


@pytest.mark.solver
def test_attention_finds_flashattention3s_structure(attention):
    """The solver's own schedule: the S = Q K^T MMA of iteration i and the P V MMA of
    iteration i-1 share a body (two stages), both MMAs issued before the softmax of S_i
    (FlashAttention-3's intra-warpgroup overlap); in the simulated steady state most of
    a warp group's exponentials run while the tensor core works."""
    kernel, plan = attention
    assert plan.planner == "solver"
    assert plan.solve is not None and plan.solve.status == "optimal"
    (lp,) = plan.loops
    dots = [o for o in lp.ops if o.op == "tile.dot"]
    assert [o.stage for o in dots] == [0, 1]
    exp_p = next(o for o in lp.ops if o.op == "math.exp2" and o.stage == 0)
    assert all(lp.ops.index(d) < lp.ops.index(exp_p) for d in dots)
    assert plan.role("consumer").warp_groups == 2
    # lockstep: both warp groups' four 512-cycle MMAs: 2048 cycles at least
    assert plan.solve.interval >= 2048

    tl = simulate(loop_lanes(kernel, plan))
    runs = [r for r in tl.runs if tl.steady[0] <= r.start < tl.steady[1]]
    exps = [r for r in runs if r.unit == "mufu" and r.lane == "consumer wg0"]
    mmas = [r for r in runs if r.unit == "tensor"]
    under = sum(
        max(0.0, min(e.unit_end, m.unit_end) - max(e.unit_start, m.unit_start))
        for e in exps
        for m in mmas
    )
    total = sum(e.unit_end - e.unit_start for e in exps)
    assert total > 0 and under / total > 0.5


def _corpus_kernel(name: str, exp: str = "math.exp2") -> tile.KernelOp:
    """Corpus program `name` (its source and defines) after warp-specialize; `exp`: the
    op that replaces the source's `math.exp2` of the 2-d tile `%p`."""
    corpus = json.loads((REPO / "corpus" / "corpus.json").read_text())
    entry = next(p for p in corpus["programs"] if p["name"] == name)
    path = REPO / entry["source"]
    text = path.read_text()
    assert text.count("math.exp2 %shifted") == 1
    module = parse_text(
        text.replace("math.exp2 %shifted", f"{exp} %shifted"), path.name, params=entry["defines"]
    )
    run_pipeline(module, "warp-specialize")
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _later_exps_ahead(kernel: tile.KernelOp, plan: schedule.Schedule):
    """In the consumer loop's issue order: the (exponential, MMA) pairs of scheduled ops
    where the op holding a 2-d tile exponential is of a later stage than the MMA, and
    those of them where it is issued ahead of the MMA."""
    loop = solver._consumer_main_loop(kernel)
    assert loop is not None
    ops = scheduled_ops(loop.body.block)
    order = schedule.loop_plan(plan, "consumer", 0, loop).ops

    def tile_exp(op) -> bool:
        return any(
            isinstance(o, math.ExpOp | math.Exp2Op) and len(o.result.type.get_shape()) == 2
            for o in op.walk()
        )

    exps = [(n, o) for n, o in enumerate(order) if tile_exp(ops[o.index])]
    dots = [(n, o) for n, o in enumerate(order) if isinstance(ops[o.index], tile.DotOp)]
    later = [(e, d) for e in exps for d in dots if e[1].stage > d[1].stage]
    ahead = [(e[1], d[1]) for e, d in later if e[0] < d[0]]
    return later, ahead


def test_not_ahead_pairs_tile_exponentials_with_the_mmas():
    """`solver._not_ahead`: the node of every consumer op holding a 2-d tile exponential
    (`math.exp2` or `math.exp`) against the node of every MMA of the body; the row
    vector's `exp2` (alpha) is in no pair. The problem carries the pairs; GEMM (no
    exponential) has none."""
    for exp in ("math.exp2", "math.exp"):
        kernel = _corpus_kernel("attention_d64_128x128", exp)
        options = PipelineOptions(schedule="solver")
        base = HeuristicPlanner().plan(kernel, options)
        built = solver.problem(kernel, base, 2, options)
        assert built is not None
        loop = solver._consumer_main_loop(kernel)
        assert loop is not None
        body = solver._Body.of(loop.body.block, built.consumer_ops, built.node_source)
        pairs = solver._not_ahead(body)
        names = [n.name for n in built.problem.nodes]
        # the op's first node (its row places the op in the issue order): `math.exp`
        # is two steps, its fold into base 2 and the exponential
        p = next(i for i, name in enumerate(names) if name.startswith(f"consumer: %p {exp[5:]}"))
        dots = [i for i, n in enumerate(built.problem.nodes) if n.name.endswith(" dot")]
        assert [names[i] for i in dots] == ["consumer: %s dot", "consumer: %acc_new dot"]
        assert pairs == [(p, d) for d in dots]
        assert built.problem.not_ahead == tuple(pairs)
        assert any(name == "consumer: %alpha exp2" for name in names)

    gemm = _kernel("gemm.mlir")
    built = solver.problem(
        gemm, HeuristicPlanner().plan(gemm, PipelineOptions()), 2, PipelineOptions()
    )
    assert built is not None and built.problem.not_ahead == ()


@pytest.mark.solver
def test_d64_128x128_attention_issues_no_later_exponential_ahead_of_an_mma():
    """The solver's d64 128x128 attention schedule (`attention_d64_128x128`) issued its
    softmax's `exp2` (stage 1) at the head of the body, ahead of the next Q K^T MMA
    (stage 0), which ptxas interleaves into the MMA's wgmmas: 9% slower on the H100
    (docs/perf.md, "An order constraint for the solver"). With `Problem.not_ahead` no op
    holding a tile exponential of a later stage than an MMA comes before it in the
    consumer loop's issue order: in the solver's own schedule (where the `exp2` is of a
    later stage than the Q K^T MMA) and in the one the kernel gets."""
    kernel = _corpus_kernel("attention_d64_128x128")
    options = PipelineOptions(schedule="solver")
    found = solver.SolverPlanner().propose(kernel, options)
    assert found.solve is not None and found.loops
    later, ahead = _later_exps_ahead(kernel, found)
    # the schedule must still put the exponential in a later stage than an MMA, else the
    # check below checks nothing
    assert later, "no tile exponential of a later stage than an MMA: nothing checked"
    assert not ahead
    plan = solver.SolverPlanner().plan(kernel, options)
    assert plan.solve is not None
    assert not _later_exps_ahead(kernel, plan)[1]


@pytest.mark.solver
def test_arbitration_keeps_the_faster_schedule_in_the_timeline_model():
    """The kernel gets the solver's schedule only where the timeline model simulates it
    faster than the heuristic's by more than MARGIN; else the heuristic's, marked
    `kept heuristic`."""
    for example in ("attention.mlir", "attention_causal_d64.mlir", "gemm_bias.mlir"):
        kernel, plan = _plan(example)
        base = HeuristicPlanner().plan(kernel, PipelineOptions())
        mine = simulate(loop_lanes(kernel, plan)).ii
        theirs = simulate(loop_lanes(kernel, base)).ii
        assert plan.solve is not None
        if plan.solve.kept == "heuristic":
            assert dataclasses.replace(plan, solve=None, planner=None) == base
        else:
            assert mine * (1 + solver.MARGIN) < theirs


@pytest.mark.solver
def test_gemm_gets_a_multi_stage_ring():
    """GEMM: the producer feeds a ring of at least three slots, the consumer loop keeps
    its body order (the release right after the MMA), two warp groups."""
    _, plan = _propose("gemm.mlir")
    assert plan.solve is not None and plan.solve.status == "optimal"
    assert plan.loops == ()
    assert plan.role("consumer").warp_groups == 2
    (ring,) = plan.arefs
    assert ring.depth >= 3
    # lockstep: 2 x 64x256x64 MMAs (512 cycles each plus the model's per-group
    # overhead), awaited within the body: the second share's result 54 cycles later,
    # after the wait on the full barrier (the model's get_cycles)
    second = 54 + 2 * (512 + HOPPER.mma_group_cycles)
    assert second <= plan.solve.interval + 1 <= (second + HOPPER.get_cycles) * 1.05


@pytest.mark.solver
def test_stages_option_fixes_the_ring_depth():
    _, plan = _propose("gemm.mlir", stages=2)
    assert [a.depth for a in plan.arefs] == [2]


@pytest.mark.solver
def test_warp_groups_option_is_kept():
    _, plan = _propose("gemm.mlir", consumer_warp_groups=2)
    assert plan.role("consumer").warp_groups == 2


@pytest.mark.solver
def test_warp_groups_that_cannot_hold_the_pipelined_tiles_keep_the_loop():
    """One consumer warp group cannot hold attention d64's 192-row S and O tiles and a
    carried P in its registers: the solver keeps the loop unpipelined (as the heuristic
    would with one warp group) and still decides the rings."""
    _, plan = _propose("attention_d64.mlir", consumer_warp_groups=1)
    assert plan.role("consumer").warp_groups == 1
    assert plan.loops == ()
    assert plan.solve is not None


@pytest.mark.solver
def test_no_coarse_pipeline_freezes_the_loop():
    _, plan = _plan("attention.mlir", coarse_pipeline=False)
    assert plan.loops == ()
    assert plan.solve is not None


@pytest.mark.solver
def test_deterministic_and_cached(monkeypatch, tmp_path, attention):
    """A second plan reads the disk cache (the solver is not called) and equals the first;
    a fresh cache solves again to the same schedule."""
    _, first = attention
    monkeypatch.setattr(modulo, "solve", _refuse)
    _, again = _propose("attention.mlir")
    assert again == first and again.solve == first.solve
    monkeypatch.undo()
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(tmp_path))
    _, fresh = _propose("attention.mlir")
    assert fresh == first and fresh.solve == first.solve
    assert list((tmp_path / "solver").glob("*.json"))


def _refuse(*args, **kwargs):
    raise AssertionError("the solver ran although its answer is cached")


def test_missing_ortools_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "ortools", None)
    monkeypatch.setitem(sys.modules, "ortools.sat", None)
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    with pytest.raises(CompileError, match=r"needs OR-Tools: pip install 'tawac\[solver\]'"):
        _plan("gemm.mlir")


def test_missing_ortools_from_the_cli(tmp_path):
    """No traceback, exit 1, no output file."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "ortools.py").write_text("raise ImportError('blocked for the test')\n")
    out = tmp_path / "gemm.ptx"
    env = {
        **__import__("os").environ,
        "PYTHONPATH": f"{block}:{REPO}",
        "TAWAC_CACHE_DIR": str(tmp_path / "cache"),
    }
    # a process: OR-Tools is blocked through PYTHONPATH, read when Python starts, and the
    # planner's import of it is the first of that process
    proc = subprocess.run(
        [sys.executable, "-m", "tawac.tools.cli", "compile", str(EXAMPLES / "gemm.mlir")]
        + ["-o", str(out), "--schedule", "solver"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "pip install 'tawac[solver]'" in proc.stderr
    assert not out.exists()


@pytest.mark.solver
def test_schedule_flag_on_opt_and_explain(tmp_path):
    src = str(EXAMPLES / "gemm.mlir")
    opt = tawac(["opt", src, "-p", "warp-specialize,plan", "--schedule", "solver"])
    assert opt.returncode == 0, opt.stderr
    assert "planner = solver, solve = interval" in opt.stdout
    explain = tawac(["explain", src, "--schedule", "solver"])
    assert explain.returncode == 0, explain.stderr
    assert "solver: initiation interval" in explain.stdout
    assert "optimal" in explain.stdout
    assert "the heuristic's schedule kept" in explain.stdout


@pytest.mark.solver
def test_schedule_round_trips(attention):
    """The solver's schedule prints and parses back (a FileCheck test can check it, a
    user can edit it)."""
    from xdsl.printer import Printer

    from tawac.driver import parse_text

    kernel, plan = attention
    schedule.record(kernel, plan)
    module = kernel.parent_op()
    import io

    buf = io.StringIO()
    Printer(stream=buf).print_op(module)
    again = parse_text(buf.getvalue(), "<test>")
    k2 = next(o for o in again.walk() if isinstance(o, tile.KernelOp))
    parsed = schedule.of(k2)
    assert parsed == plan
    assert parsed.solve == plan.solve
    assert dataclasses.replace(parsed, solve=None) == plan


@pytest.mark.solver
def test_explain_timeline_of_the_solver_schedule():
    """`tawac explain --schedule solver --timeline`: the picture is drawn from the
    solver's schedule (three stages of the consumer loop of d64 attention with 64-key
    blocks, a schedule the solver keeps: 7-12% faster than the heuristic's on the H100)
    and says what the solver found."""
    from tawac.tools.explain import explain_module, timeline_svg

    path = EXAMPLES / "attention_d64.mlir"
    module = parse_text(path.read_text(), path.name, params={"BLOCK_M": 128, "BLOCK_N": 64})
    info = explain_module(module, PipelineOptions(schedule="solver"), True)
    assert info["planner"] == "solver"
    assert info["solve"]["kept"] == "solver"
    lane = next(ln for ln in info["timeline"]["lanes"] if ln["name"] == "consumer wg0")
    assert {s["stage"] for s in lane["steps"]} == {0, 1, 2}
    svg = timeline_svg(info)
    assert f"solver: II {info['solve']['interval']:,} cycles" in svg


def test_schedule_environment_variable(monkeypatch):
    """TAWAC_SCHEDULE picks the default planner of compile, run, explain and
    compile_file; an explicit option wins."""
    monkeypatch.setenv("TAWAC_SCHEDULE", "solver")
    assert PipelineOptions().schedule == "solver"
    assert PipelineOptions(schedule="heuristic").schedule == "heuristic"
    assert "plan{schedule=solver " in PipelineOptions().pipeline()
    monkeypatch.setenv("TAWAC_SCHEDULE", "magic")
    kernel = _kernel("gemm.mlir")
    from tawac.schedule.registry import get_planner

    with pytest.raises(CompileError, match="unknown planner 'magic'"):
        get_planner(PipelineOptions().schedule).plan(kernel, PipelineOptions())
    monkeypatch.delenv("TAWAC_SCHEDULE")
    assert PipelineOptions().schedule == "auto"


@pytest.mark.solver
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.mlir")), ids=lambda p: p.name)
def test_every_example_assembles_under_the_solver(path):
    """Every example compiles with `--schedule solver` to a cubin whose ptxas report is
    clean: no spills, no stack frame, no warning (the register model keeps the solver's
    carried tiles within the budget)."""
    from tawac.driver import compile_file

    res = compile_file(path, cubin=True, schedule="solver")
    report = res.ptxas_report
    assert res.cubin is not None and res.cubin[:4] == b"\x7fELF"
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "0 bytes stack frame" in report, report
    assert "warning" not in report.lower(), report


def test_mma_mufu_hold_holds_the_tensor_core_for_the_exponentials_after_an_mma():
    """ptxas spreads the exponentials a schedule issues after an MMA that does not feed
    them between its wgmmas. With `mma_mufu_hold` the MMA's tensor occupancy grows by
    their issue time: the solver's bias schedule issues S = QK^T, then the previous
    iteration's exponentials. The PV MMA before it meets an `scf.if` first and is left
    alone. At 0 (an uncalibrated target's) the lanes are as they were."""
    from tawac.tools.calibrate import prepare

    p = prepare(REPO / "tests/data/attention_bias.mlir", {"BLOCK_N": 64}, "solver")
    base = loop_lanes(p.kernel, p.plan, target=dataclasses.replace(HOPPER, mma_mufu_hold=0.0))
    held = loop_lanes(p.kernel, p.plan, target=dataclasses.replace(HOPPER, mma_mufu_hold=1.0))
    assert Target().mma_mufu_hold == 0.0
    one, two = (next(ln for ln in lanes if ln.name == "consumer wg0") for lanes in (base, held))
    steps = {s.label: (i, s) for i, s in enumerate(one.steps)}
    s_dot, pv_dot, p_exp = steps["%s dot"], steps["%acc_new dot"], steps["%p exp2"]
    assert s_dot[0] < p_exp[0]  # the exponentials come after S = QK^T in issue order
    assert two.steps[s_dot[0]].occupancy == pytest.approx(s_dot[1].occupancy + p_exp[1].issue)
    assert two.steps[pv_dot[0]].occupancy == pv_dot[1].occupancy
    changed = [i for i, (a, b) in enumerate(zip(one.steps, two.steps, strict=True)) if a != b]
    assert changed == [s_dot[0]]
    assert simulate(held).ii > simulate(base).ii


def test_phase_leads_price_a_loop_whose_trips_vary_from_both_starts():
    """`Target.phase_leads` prices a main loop whose trip count changes from tile to tile
    (a causal key loop ends at the diagonal: `trips_vary`) at the mean of its
    steady-state intervals from those starts of the first consumer warp group; the
    heuristic's d64 128x64 loop has two (in phase, and one iteration apart: the
    measured causal kernel's). A loop of fixed trips keeps the in-phase price, and the
    default, (0.0,), leaves every price as it was (docs/perf/2026-11-27.md)."""
    from tawac.schedule.model import model_intervals, role_loops, trips_vary
    from tawac.tools.calibrate import prepare

    leads = dataclasses.replace(HOPPER, phase_leads=(0.0, 1.0))
    one = dataclasses.replace(HOPPER, phase_leads=(0.0,))
    assert Target().phase_leads == (0.0,)
    assert "leads=" in leads.model_key and "leads=" not in one.model_key
    causal = prepare(REPO / "tests/data/attention_causal_d64_bn64.mlir", {}, "heuristic")
    plain = prepare(REPO / "examples/attention_d64.mlir",
                    {"BLOCK_M": 128, "BLOCK_N": 64}, "heuristic")  # fmt: skip
    assert trips_vary(role_loops(causal.kernel, "consumer")[0])
    assert not trips_vary(role_loops(plain.kernel, "consumer")[0])
    (in_phase,) = model_intervals(causal.kernel, causal.plan, target=one)
    (mean,) = model_intervals(causal.kernel, causal.plan, target=leads)
    lanes = loop_lanes(causal.kernel, causal.plan, target=one)
    apart = simulate(lanes, 24, {"consumer wg0": in_phase}).ii
    assert apart < 0.9 * in_phase  # the second steady state is faster
    assert mean == pytest.approx((in_phase + apart) / 2)
    assert model_intervals(plain.kernel, plain.plan, target=leads) == model_intervals(
        plain.kernel, plain.plan, target=one
    )


def test_the_solver_offers_no_consumer_split_a_one_row_tile_cannot_take():
    """A kernel without MMAs whose tiles are one row (examples/layernorm_bwd_rows.mlir:
    a whole row a block): the blocked layout holds a row in one warp group, so the
    solver's candidates are one consumer warp group (it proposed two, which
    cooperative-consumers then refused); the 8-row form of the row-block backward may
    take two."""

    def candidates(name: str, params: dict) -> list[int]:
        module = parse_file(EXAMPLES / name, params=params)
        run_pipeline(module, "warp-specialize")
        kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
        base = HeuristicPlanner().plan(kernel, PipelineOptions())
        return solver._candidates(kernel, PipelineOptions(), base)

    assert candidates("layernorm_bwd_rows.mlir", {"BLOCK_M": 1}) == [1]
    assert candidates("layernorm_bwd_rows.mlir", {"BLOCK_M": 2}) == [1, 2]  # a row a WG
    assert 2 in candidates("layernorm_bwd.mlir", {"BLOCK_M": 8, "BLOCK_N": 1024})
