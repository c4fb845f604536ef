"""`sink-reductions`: the rewritten loops compute what the written ones do in the
reference interpreter (ragged sizes, every kind, both operand orders, an initial value
that is not the identity), the two spellings of a row sum (reduced in the loop with
`fastmath<reassoc>`, or accumulated in a tile as Triton's tutorials write it) compile to
the same PTX, and what is not legal (a sum without reassoc, a running max the loop
reads) or does not fit the registers is kept and said why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from programs import ordered_sums

from tawac.analysis.grid import from_attr
from tawac.check.validate import validate
from tawac.compiler import compile_file, parse_file, parse_text, run_pipeline
from tawac.dialects import tile
from tawac.passes.sink_reductions import SINK_ATTR

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "filecheck" / "passes" / "sink-reductions.mlir"
RMS = ROOT / "examples" / "rmsnorm.mlir"
RMS_TILE = ROOT / "experiments" / "rows_acc" / "rmsnorm.mlir"


def _ordered(folder: Path) -> Path:
    """examples/rmsnorm.mlir with its sum's reassoc taken off (`programs.ordered_sums`)."""
    src = folder / "rmsnorm.mlir"
    src.write_text(ordered_sums("rmsnorm.mlir"))
    return src


def _kernels(path: Path) -> dict[str, str]:
    """Each `tile.kernel` of a file as its own program text."""
    text = path.read_text()
    starts = [m.start() for m in re.finditer(r"^tile\.kernel @", text, re.M)]
    out = {}
    for a, b in zip(starts, [*starts[1:], len(text)], strict=True):
        chunk = text[a:b]
        chunk = chunk[: chunk.rindex("tile.return")] + "tile.return\n}\n"
        out[re.match(r"tile\.kernel @(\w+)", chunk).group(1)] = chunk
    return out


SIZES = {
    "sum_reassoc": {"M": 21, "N": 1300},
    "max_not_identity": {"M": 9, "N": 300},
    "min_scalar": {"N": 3001, "P": 1},
    "kept": {"M": 70, "N": 1500},
    "two": {"M": 13, "N": 700},
}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_sunk_loops_compute_what_the_written_ones_do(name):
    module = parse_text(_kernels(CASES)[name], f"{name}.mlir")
    v = validate(module, "sink-reductions", SIZES[name], program=name, seed=3)
    assert v.changed  # the loops rewritten (or, for `kept`, the reasons recorded)


@pytest.mark.parametrize(
    "params", [{"BLOCK_M": 8, "BLOCK_N": 256}, {"BLOCK_M": 64, "BLOCK_N": 128}]
)
def test_the_rms_norm_with_reassoc_is_sunk_and_agrees(params):
    text = RMS.read_text()
    module = parse_text(text, "rmsnorm.mlir", params=params)
    v = validate(module, "sink-reductions", {"M": 77, "N": 1000}, program="rmsnorm", seed=1)
    assert v.changed
    kernel = next(op for op in module.walk() if isinstance(op, tile.KernelOp))
    assert SINK_ATTR not in kernel.attributes  # validate works on a copy


def _ptx_shape(ptx: str) -> str:
    """PTX with register and label numbers erased (the same program by another name)."""
    return re.sub(r"%[a-z]+\d+|\$L_\w+", "%", ptx)


def test_two_spellings_of_a_row_sum_compile_to_the_same_ptx(tmp_path):
    params = {"BLOCK_M": 8, "BLOCK_N": 256}
    sunk = compile_file(RMS, params=params).ptx
    written = compile_file(RMS_TILE, params=params).ptx
    assert _ptx_shape(sunk) == _ptx_shape(written)
    # and differ from the sum without reassoc (each block reduced: shuffles in the loop)
    kept = compile_file(_ordered(tmp_path), params=params).ptx
    assert sunk.count("shfl.sync") < kept.count("shfl.sync") or _ptx_shape(sunk) != _ptx_shape(kept)


def test_a_sum_without_reassoc_keeps_its_order(tmp_path):
    """A sum without reassoc is not reordered: the RMS norm without its mark compiles the
    same with the pass on and off, and says why."""
    params = {"BLOCK_M": 8, "BLOCK_N": 256}
    ordered = _ordered(tmp_path)
    on = compile_file(ordered, params=params)
    off = compile_file(ordered, params=params, sink_reductions=False)
    assert on.ptx == off.ptx
    module = parse_file(ordered, params=params)
    run_pipeline(module, "sink-reductions")
    kernel = next(op for op in module.walk() if isinstance(op, tile.KernelOp))
    got = from_attr(kernel.attributes[SINK_ATTR])
    assert got == {"sunk": 0, "kept": ["a sum without fastmath<reassoc>: its order is kept"]}


def test_the_knob_turns_it_off(tmp_path):
    params = {"BLOCK_M": 8, "BLOCK_N": 256}
    on = compile_file(RMS, params=params).ptx
    off = compile_file(RMS, params=params, sink_reductions=False).ptx
    base = compile_file(_ordered(tmp_path), params=params).ptx
    assert off == base
    assert on != off


def test_explain_says_what_was_sunk_and_why_the_rest_was_kept(tmp_path):
    from cli_inprocess import tawac

    src = RMS
    flags = ["-D", "BLOCK_M=8", "-D", "BLOCK_N=256"]
    sunk = tawac(["explain", str(src), *flags], check=True).stdout
    assert "reductions in loops: 1 accumulated elementwise in a tile, reduced once" in sunk
    kept = tawac(["explain", str(_ordered(tmp_path)), *flags], check=True).stdout
    assert "reductions in loops: each block reduced in the loop; kept in the loop: a sum " in kept
    off = tawac(["explain", str(src), *flags, "--no-sink-reductions"], check=True).stdout
    assert "reductions in loops" not in off
