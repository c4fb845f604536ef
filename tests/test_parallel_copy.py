"""A loop's yield is a parallel copy: every yielded value is read before any iteration
argument is overwritten. A software-pipelined loop carries shift registers (copy 2 <-
copy 1, copy 1 <- new); assigning them in yield order clobbered copy 1 before copy 2 read
it (found by the GPU sweep under the solver planner: a four-stage attention schedule
computed garbage)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from tawac import schedule
from tawac.backend_ptx.lowering import control
from tawac.dialects import tile
from tawac.dialects.schedule import LoopPlan, OpPlan
from tawac.driver import parse_text, run_pipeline
from tawac.support.options import PipelineOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gpu_attention_sweep import instantiate  # noqa: E402


def _run(moves, save_log):
    """Execute sequential moves on a register file of names."""
    regs = {r: r for m in moves for r in m}
    saved = {}

    def save(src):
        name = f"tmp({src})"
        saved[name] = regs[src]
        save_log.append(src)
        return name

    seq = control.sequential_copies(moves, save)
    regs.update(saved)
    for d, s in seq:
        regs[d] = regs[s]
    return regs


def test_shift_register():
    log = []
    regs = _run([("c1", "new"), ("c2", "c1"), ("c3", "c2")], log)
    assert (regs["c1"], regs["c2"], regs["c3"]) == ("new", "c1", "c2")
    assert log == ["c1", "c2"]


def test_swap_and_self_moves():
    log = []
    regs = _run([("a", "b"), ("b", "a"), ("c", "c")], log)
    assert (regs["a"], regs["b"], regs["c"]) == ("b", "a", "c")


def test_independent_moves_need_no_temporaries():
    log = []
    regs = _run([("a", "x"), ("b", "y")], log)
    assert (regs["a"], regs["b"]) == ("x", "y") and log == []


# The solver's four-stage schedule of the 128x64 d64 attention instance: m_new is read
# one and two stages after it is computed, so the steady loop carries two copies.
FOUR_STAGES = (
    "18 3, 12 2, 19 3, 20 3, 3 1, 8 2, 21 3, 0 0, 1 0, 4 1, 9 2, 10 2, 11 2, 13 2, 16 2, "
    "5 1, 6 1, 17 2, 14 2, 2 0, 7 1, 15 2"
)


def test_four_stage_attention_yields_through_temporaries(monkeypatch):
    module = parse_text(instantiate(128, 64, 64, False), "sweep.mlir")
    run_pipeline(module, "warp-specialize,plan")
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    from tawac.analysis.loops import main_loops, scheduled_ops
    from tawac.dialects import aref
    from tawac.schedule.waits import plan_waits

    part = next(
        p
        for p in kernel.body.block.ops
        if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    )
    loop = main_loops(part)[0]
    ops = scheduled_ops(loop.body.block)
    order = [tuple(map(int, x.split())) for x in FOUR_STAGES.split(", ")]
    plan = LoopPlan("consumer", 0, tuple(OpPlan(i, ops[i].name, st) for i, st in order))
    # the MMAs' waits by the planner's rule for this issue order
    plan = dataclasses.replace(plan, waits=plan_waits(loop, plan, {}))
    schedule.update(kernel, loops=(plan,))
    saves = []
    real = control.sequential_copies

    def spy(moves, save):
        def counted(src):
            saves.append(src)
            return save(src)

        return real(moves, counted)

    monkeypatch.setattr(control, "sequential_copies", spy)
    run_pipeline(module, PipelineOptions().pipeline(start="pipeline"))
    # m_new's copy 1 is saved before copy 1 is overwritten (two f32 registers a thread)
    assert len(saves) >= 2
