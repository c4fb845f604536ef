"""Every example and test kernel, parsed (a `.ttir` converted) and printed, parses back
to the same text: what `tawac opt` prints is a program tawac reads as the same program
(found missing: xDSL printed -inf as `dense<0xff800000>` and read it back as 4.29e9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac.compiler import parse_file, parse_text

REPO = Path(__file__).resolve().parents[1]
#: Sources that are refused by design (tested as such elsewhere).
REFUSED: set[str] = set()
SOURCES = sorted(
    p
    for p in [*REPO.glob("examples/*.mlir"), *REPO.glob("examples/triton/*.ttir")]
    + [*REPO.glob("tests/data/**/*.mlir"), *REPO.glob("tests/data/triton/*.ttir")]
    if p.name not in REFUSED
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_printed_ir_parses_back_to_itself(path):
    first = str(parse_file(path))
    again = str(parse_text(first, f"{path.stem}.printed.mlir"))
    assert again == first


EXAMPLES = sorted(REPO.glob("examples/*.mlir"))


@pytest.mark.parametrize("stop", ["warp-specialize", "lower-aref", "tma-store"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_ir_between_passes_parses_back_to_itself(path, stop):
    """`tawac opt -p ...` output in the middle of the default pipeline (arefs, warp
    groups and schedules; mbarriers and rings; staged stores) reads back as itself."""
    from tawac.compiler import run_pipeline
    from tawac.support.options import PipelineOptions

    passes = PipelineOptions().pipeline().split(",")
    upto = next(i for i, p in enumerate(passes) if p.split("{")[0] == stop)
    module = parse_file(path)
    run_pipeline(module, ",".join(passes[: upto + 1]))
    first = str(module)
    assert str(parse_text(first, f"{path.stem}.{stop}.mlir")) == first
