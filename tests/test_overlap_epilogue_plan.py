"""`overlap-epilogue` applies every `overlap` the planner plans: for every example and
test kernel compiled with `overlap_epilogue=True`, where the schedule says `overlap` the
consumer's tile loop was rotated (the epilogue's store copied under the next tile's
first MMA and after the loop), and where the pass could not rotate it, it is an error,
never a schedule the code does not follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac import schedule
from tawac.compiler import parse_file, run_pipeline
from tawac.dialects import aref, tile
from tawac.support.options import PipelineOptions

REPO = Path(__file__).resolve().parent.parent
KERNELS = sorted((REPO / "examples").glob("*.mlir")) + sorted((REPO / "tests/data").glob("*.mlir"))


def _consumer_stores(kernel: tile.KernelOp) -> int:
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    consumer = next(p for p in parts if p.role.data == "consumer")
    return sum(isinstance(o, tile.StoreOp) for o in consumer.walk())


def _up_to_overlap(path: Path, overlap: bool) -> tile.KernelOp:
    module = parse_file(path)
    spec = PipelineOptions(overlap_epilogue=overlap).pipeline(stop="cooperative-consumers")
    run_pipeline(module, spec)
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_planned_overlap_is_applied(path):
    kernel = _up_to_overlap(path, overlap=True)  # a CompileError where it is not
    if not schedule.of(kernel).overlap:
        return
    plain = _up_to_overlap(path, overlap=False)
    # rotated: the store runs after the next tile's first MMA and after the loop too
    assert _consumer_stores(kernel) > _consumer_stores(plain)


def test_overlap_is_planned_for_attention_and_not_for_gemm():
    planned = {
        p.name: schedule.of(_up_to_overlap(p, overlap=True)).overlap
        for p in (REPO / "examples/attention.mlir", REPO / "examples/gemm.mlir")
    }
    assert planned == {"attention.mlir": True, "gemm.mlir": False}
