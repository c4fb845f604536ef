"""Register pressure of a consumer loop under its schedule (`tawac.analysis.pressure`),
and the solver's check of its answers against it (a two-stage d128 attention loop the
solver chose under the calibrated model spilled 44 bytes: ptxas 13.0, docs/perf.md)."""

import dataclasses
from pathlib import Path

import pytest

from tawac.analysis.pressure import consumer_pressure, loop_pressure
from tawac.dialects import aref, tile
from tawac.dialects.schedule import LoopPlan, OpPlan
from tawac.driver import run_pipeline
from tawac.ir.parser import parse_file
from tawac.schedule import solver
from tawac.schedule.model import role_loops
from tawac.schedule.planner import HeuristicPlanner, complete
from tawac.schedule.waits import plan_waits
from tawac.support.options import PipelineOptions

EXAMPLES = Path(__file__).parent.parent / "examples"

#: The consumer loop order the solver answered for examples/attention.mlir under the
#: H100 calibration before the check (index, op, stage): the exponentials of S_j in the
#: next body, so P in f32, its bf16 copy, the rescaled O and S_{j+1} live together.
SPILLED = [
    (0, "aref.get", 0), (1, "tile.dot", 0), (10, "math.exp2", 1), (19, "aref.get", 1),
    (18, "arith.truncf", 1), (2, "aref.consumed", 0), (20, "tile.dot", 1), (3, "scf.if", 0),
    (4, "tile.reduce", 0), (8, "arith.mulf", 0), (5, "arith.mulf", 0),
    (6, "arith.maximumf", 0), (7, "tile.broadcast", 0), (11, "tile.reduce", 1),
    (12, "arith.subf", 0), (13, "math.exp2", 0), (15, "arith.addf", 1),
    (16, "tile.broadcast", 0), (21, "aref.consumed", 1), (17, "arith.mulf", 0),
    (9, "arith.subf", 0), (14, "arith.mulf", 0),
]  # fmt: skip


def _kernel(example: str) -> tile.KernelOp:
    module = parse_file(EXAMPLES / example)
    run_pipeline(module, "warp-specialize")
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _heuristic(example: str):
    kernel = _kernel(example)
    options = PipelineOptions()
    return kernel, complete(kernel, HeuristicPlanner().plan(kernel, options), options)


def test_gemm_holds_its_accumulator():
    """GEMM 128x256 over two consumer warp groups: the 64x256 f32 accumulator, 128
    registers per thread, is all the loop holds."""
    kernel, plan = _heuristic("gemm.mlir")
    ((p, budget),) = consumer_pressure(kernel, plan)
    assert (p.peak, budget) == (128, 240)
    assert [r for _, r in p.live] == [128]


def test_attention_counts_s_o_and_the_bf16_p():
    """The heuristic's d128 attention loop (P V deferred under the next softmax): S in
    flight (64), O (64) and P in bf16 kept until its MMA's wait (32)."""
    kernel, plan = _heuristic("attention.mlir")
    ((p, budget),) = consumer_pressure(kernel, plan)
    assert (p.peak, budget) == (160, 240)
    assert sorted(r for _, r in p.live) == [32, 64, 64]
    assert p.peak + solver.WORKING_SET <= budget


def test_the_order_that_spilled_is_over_budget():
    """The order that spilled holds P (f32), its bf16 copy, the rescaled O and S at once:
    224 registers, which with the working set exceeds 240 (the linear count of the
    solver's model saw 192)."""
    kernel, _ = _heuristic("attention.mlir")
    (loop,) = role_loops(kernel, "consumer")
    lp = LoopPlan("consumer", 0, tuple(OpPlan(*o) for o in SPILLED))
    lp = dataclasses.replace(lp, waits=plan_waits(loop, lp, {}))
    p = loop_pressure(loop, lp, 2)
    assert p.peak == 224
    assert {r for _, r in p.live} == {64, 32}
    assert p.peak + solver.WORKING_SET > 240


@pytest.mark.solver
def test_solver_answers_within_the_register_budget():
    """Whatever the model prices, the solver's answer for attention fits: its loop's
    pressure plus the working set within the consumer's budget."""
    kernel = _kernel("attention.mlir")
    options = PipelineOptions(schedule="solver")
    found = solver.SolverPlanner().propose(kernel, options)
    plan = complete(kernel, found, options)
    for p, budget in consumer_pressure(kernel, plan):
        assert p.peak + solver.WORKING_SET <= budget


def test_loop_defined_tiles_and_slots_are_not_counted():
    """Slots (`aref.get`) live in shared memory: a GEMM's operands add nothing."""
    kernel, plan = _heuristic("gemm.mlir")
    (loop,) = role_loops(kernel, "consumer")
    gets = [o for o in loop.body.block.ops if isinstance(o, aref.GetOp)]
    assert gets
    p = loop_pressure(loop, plan.loop("consumer", 0), 2)
    assert all("aref.get" not in name for name, _ in p.live)
    assert p.peak == 128
