"""What the planners keep instead of computing again, and that it gives what computing
again gives: the timeline model's interval without the picture (`steady_ii`) and its
price of a schedule by its lanes (`tawac.schedule.model`), the modulo solver's step 1 for
problems it does not tell apart and its probes asked again (`tawac.schedule.modulo`), the
solver planner's answers read or written in this process (`solve_cached`), and a Triton
function's TTIR and ABI (`tawac.triton`)."""

from __future__ import annotations

import dataclasses

import pytest

from tawac.schedule import model
from tawac.schedule.simulate import Dep, Lane, Step, simulate, steady_ii


def _lanes(depth: int, consumers: int = 1) -> list[Lane]:
    """A producer's put (TMA) of a slot that `consumers` consumer lanes compute on (FMA)
    and release (a stage later with three slots); the put of iteration i waits for the
    releases of i - depth."""
    empty = tuple(Dep(f"consumer wg{c}", 1, depth, "empty aref0", 0) for c in range(consumers))
    put = Step("put", "tma", 10, 10, 100, empty)
    compute = Step("compute", "fma", 50, 50, 50, (Dep("producer", 0, 0, "full aref0"),))
    release = Step("release", "sync", 0, 0, 0, stage=1 if depth == 3 else 0)
    lanes = [Lane("producer", "producer", (put,))]
    return lanes + [
        Lane(f"consumer wg{c}", "consumer", (compute, release)) for c in range(consumers)
    ]


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("consumers", [1, 2])
def test_steady_ii_is_the_simulated_interval(depth, consumers):
    lanes = _lanes(depth, consumers)
    for iterations in (2, 8, 24, 30):
        assert steady_ii(lanes, iterations) == simulate(lanes, iterations).ii
    late = {"consumer wg0": 37.5}
    assert steady_ii(lanes, 24, late) == simulate(lanes, 24, late).ii


def test_steady_ii_names_a_deadlock_as_simulate_does():
    put = Step("put", "tma", 10, 10, 100, (Dep("consumer", 0, 0, "empty aref0"),))
    take = Step("take", "fma", 5, 5, 5, (Dep("producer", 0, 0, "full aref0"),))
    lanes = [Lane("producer", "producer", (put,)), Lane("consumer", "consumer", (take,))]
    for run in (simulate, steady_ii):
        with pytest.raises(ValueError, match="deadlock; waiting: producer: 'put'"):
            run(lanes, 4)


def test_a_schedule_is_priced_once_by_its_lanes():
    lanes = _lanes(2, consumers=2)
    leads = (0.0, 0.5)
    model._priced.cache_clear()
    first = model._phase_priced(lanes, 24, leads)
    again = model._phase_priced(list(lanes), 24, leads)
    assert model._priced.cache_info().hits == 1
    in_phase = simulate(lanes, 24).ii
    apart = simulate(lanes, 24, {"consumer wg0": 0.5 * in_phase}).ii
    assert first == again == (in_phase + apart) / 2


def _carried(regs: int):
    """test_modulo's loop whose carried value needs two copies at II 30: with 200
    registers only one fits (II 36)."""
    from tawac.schedule.modulo import Edge, Group, Node, Problem, Value

    nodes = (
        Node("p", 0, "alu", 1, 1, 1, ("b",)),
        Node("c", 1, "alu", 1, 1, 1, ("b",)),
        Node("k", 2, "tensor", 1, 30, 1, ("m",)),
    )
    return Problem(
        nodes,
        (Edge(0, 1, 70),),
        (Group("b", regs, reserved=50), Group("m", 255)),
        values=(Value(0, 100, ((1, 0),)),),
    )


def _counting(monkeypatch):
    """The CP-SAT models `modulo` solves from now on, as (II, full) per call."""
    from tawac.schedule import modulo

    calls: list[tuple[int, bool]] = []
    run = modulo._run

    def counted(cp_model, built, wall, deterministic):
        calls.append((built.ii, built.full))
        return run(cp_model, built, wall, deterministic)

    build = modulo._build

    def marked(cp_model, problem, units, ii, **flags):
        built = build(cp_model, problem, units, ii, **flags)
        built.ii, built.full = ii, flags["registers"]
        return built

    monkeypatch.setattr(modulo, "_run", counted)
    monkeypatch.setattr(modulo, "_build", marked)
    return calls


def _same(a, b) -> bool:
    return dataclasses.replace(a, seconds=0) == dataclasses.replace(b, seconds=0)


def test_step_one_is_kept_for_the_problems_it_does_not_tell_apart(monkeypatch):
    pytest.importorskip("ortools")
    from tawac.schedule import modulo

    modulo._FIRSTS.clear()
    fresh = modulo.solve(_carried(200))
    modulo._FIRSTS.clear()
    calls = _counting(monkeypatch)
    roomy = modulo.solve(_carried(255))
    assert any(not full for _, full in calls)
    calls.clear()
    # another register budget: step 1's models are the same, its outcome is reused
    tight = modulo.solve(_carried(200))
    assert calls and all(full for _, full in calls)
    assert _same(tight, fresh)
    assert tight.step1_interval == roomy.step1_interval == 30 and tight.interval == 36


def test_a_probe_asked_again_is_not_solved_again(monkeypatch):
    pytest.importorskip("ortools")
    import time

    from tawac.schedule import modulo

    problem = _carried(200)
    units = modulo.Units.of(problem, modulo.problem_scale(problem))
    calls = _counting(monkeypatch)
    s = modulo._Search(modulo._cp_model(), problem, units, 100, 30.0, time.perf_counter())
    first = s.probe(33, True, modulo.PROBE)
    assert s.probe(33, True, modulo.PROBE)[1] is first[1]  # the same solver's answer
    assert calls == [(33, True)]
    s.probe(33, True, modulo.FINAL)  # another budget: another answer
    s.probe(33, False, modulo.PROBE)  # another model
    assert calls == [(33, True), (33, True), (33, False)]


def test_solve_cached_keeps_what_it_read_or_wrote(monkeypatch, tmp_path):
    pytest.importorskip("ortools")
    from tawac.schedule import modulo, solver

    monkeypatch.setenv("TAWAC_CACHE_DIR", str(tmp_path))
    problem = _carried(200)
    first = solver.solve_cached(problem, 5.0)
    (entry,) = (tmp_path / "solver").glob("*.json")

    def refuse(*args, **kwargs):
        raise AssertionError("solved or read again")

    monkeypatch.setattr(modulo, "solve", refuse)
    monkeypatch.setattr(solver, "_load", refuse)
    assert solver.solve_cached(problem, 5.0) is first
    entry.unlink()  # a cleared cache solves again
    with pytest.raises(AssertionError, match="solved or read again"):
        solver.solve_cached(problem, 5.0)
    monkeypatch.undo()
    monkeypatch.setenv("TAWAC_CACHE_DIR", str(tmp_path))
    assert _same(solver.solve_cached(problem, 5.0), first)
    assert entry.exists()


def _kernel(x):
    pass


def test_a_triton_function_reads_its_ttir_and_abi_once(monkeypatch):
    import tawac.triton as tt

    seen: list[str] = []
    monkeypatch.setattr(tt, "ttir_of", lambda fn, sig, consts: seen.append("ttir") or "text")
    monkeypatch.setattr(tt, "kernel_abi", lambda ttir, name: seen.append("abi") or tt.Abi((), ()))
    fn = tt.compile(_kernel, signature={"x": "i32"}, constexprs={"B": 64}, tuning=None)
    assert fn._ttir({"B": 64}) == fn._ttir({"B": 64}) == "text"
    assert fn._abi("text", "a.ttir") is fn._abi("text", "b.ttir")
    assert fn.sizes() == frozenset()
    assert seen == ["ttir", "abi"]
    fn._ttir({"B": 128})
    assert seen == ["ttir", "abi", "ttir"]
