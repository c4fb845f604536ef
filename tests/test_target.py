"""The Hopper target model (tawac/target): facts, the MMA atom table, register budgets
and the named-barrier allocator."""

from __future__ import annotations

import pytest

from tawac.schedule.planner import PRODUCER_REGS, consumer_budget
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, NamedBarriers


def test_register_cap_follows_the_register_file():
    # 2, 3, 4 warp groups: 65536 / (128 w), at most 255, a multiple of 8.
    assert [HOPPER.register_cap(w) for w in (2, 3, 4)] == [248, 168, 128]
    for w in range(1, 9):
        cap = HOPPER.register_cap(w)
        assert cap % HOPPER.setmaxnreg_step == 0
        assert cap * HOPPER.warp_group_size * w <= HOPPER.register_file


@pytest.mark.parametrize(("consumers", "budget"), [(1, 256), (2, 240), (3, 160)])
def test_consumer_budgets_add_up(consumers, budget):
    """setmaxnreg budgets must not exceed what the entry cap gives all warp groups (a
    wrong sum can hang in setmaxnreg.inc)."""
    assert consumer_budget(consumers) == budget
    wgs = consumers + 1
    assert budget * consumers + PRODUCER_REGS <= HOPPER.register_cap(wgs) * wgs
    assert HOPPER.setmaxnreg_min <= budget <= HOPPER.setmaxnreg_max


def test_mma_atoms():
    bf16 = HOPPER.mma_atom("bf16", "bf16", "f32")
    assert bf16 is not None and bf16.k == 16 and bf16.mn_major
    assert bf16.shape(256) == "m64n256k16"
    fp8 = HOPPER.mma_atom("e4m3", "e5m2", "f32")
    assert fp8 is not None and fp8.k == 32 and not fp8.mn_major  # K-major only
    tf32 = HOPPER.mma_atom("tf32", "tf32", "f32")
    assert tf32 is not None and tf32.k == 8
    assert HOPPER.mma_atom("bf16", "f16", "f32") is None
    assert HOPPER.mma_atom("bf16", "bf16", "f16") is None  # bf16 accumulates in f32 only


def test_named_barriers_preferred_and_disjoint():
    bars = NamedBarriers()
    assert bars.get("warp group", 3, preferred=1) == 1
    assert bars.get("consumer partition", preferred=15) == 15
    assert bars.get("ping-pong turns", 2, preferred=2) == 4  # 2..3 taken: first free pair
    assert bars.get("warp group", 3, preferred=1) == 1  # the same purpose, the same ids
    used = [i for r in bars.assigned.values() for i in r]
    assert len(used) == len(set(used)) and 0 not in used


def test_named_barriers_run_out():
    bars = NamedBarriers()
    bars.get("a", 10)
    bars.get("b", 5)
    assert sorted(i for r in bars.assigned.values() for i in r) == list(range(1, 16))
    with pytest.raises(CompileError, match="out of named barriers: 'c' needs 1, 15 of 15"):
        bars.get("c")


def test_cost_table_has_sources_and_the_tensor_core_rate():
    for c in HOPPER.costs:
        assert c.source, c
        assert c.latency is not None or c.throughput is not None, c
    # One wgmma m64nNk16 bf16 every N/2 cycles: 4096 bf16 FLOP per cycle per SM at any N.
    for n in (64, 128, 256):
        rate = HOPPER.cost(f"wgmma m64n{n}k16 bf16").throughput
        assert rate is not None and 2 * 64 * n * 16 * rate == 4096
    with pytest.raises(KeyError):
        HOPPER.cost("wgmma m64n8k16 tf32")
