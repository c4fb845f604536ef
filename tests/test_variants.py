"""Equivalent spellings (`tawac.check.variants`) of every corpus program and every Triton
kernel: ten variants each, printed and parsed back as a user's source would be, must
compute what the original computes after the tile-level passes (in the interpreter, on
the original's inputs; the first two also after the warp-specialized kernel's passes up
to `lower-aref`), and compile to PTX or be refused with a located error for one of
the documented reasons (`REFUSALS`, docs/design/tools.md, "tawac check") or for the
reason the original itself is refused (a kernel the backend does not lower yet).

The variants' tile IR after the passes is interpreted (`Validator.apply`'s `known`) and
compiled once per distinct IR (`unnamed_key`: renamed or
re-associated spellings canonicalize to the same IR), with the heuristic planner (the
default `auto` also runs the solver: seconds a kernel), to PTX: every distinct one
(`TAWAC_VARIANTS_COMPILE=2` compiles the first two of each program only, for a quick
local run)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from test_check import TRITON

from tawac.check import Validator, baseline, tile_pipeline
from tawac.check.validate import PARTITION_STOP, unnamed_key
from tawac.check.variants import REWRITES, variant, variants
from tawac.compiler import parse_file, parse_text
from tawac.dialects import tile
from tawac.driver import compile_file, compile_module
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = json.loads((REPO / "corpus" / "corpus.json").read_text())["programs"]
COUNT = 10
COMPILED = int(os.environ.get("TAWAC_VARIANTS_COMPILE", COUNT))
#: The first variants of each program also checked through the passes up to `lower-aref`
#: (partitions and arefs interpreted; the heuristic planner).
PARTITIONED = 2

#: Refusals a variant may get (a located error whose message matches), each for a reason
#: the docs give (docs/design/tools.md, "tawac check").
REFUSALS: dict[str, str] = {
    # a schedule written on the kernel names its arefs by identity, the arguments of
    # their payload in load order: loads written in another order make other arefs
    r"plan: the schedule names aref '\w+', which the kernel does not have": "given schedule",
}

CASES = [
    (p["name"], p["source"], p["defines"] or None, p["check_sizes"], p.get("indices"))
    for p in PROGRAMS
] + [(path, path, None, sizes, None) for path, sizes in sorted(TRITON.items())]


@pytest.mark.parametrize(
    ("name", "source", "params", "sizes", "indices"), CASES, ids=[c[0] for c in CASES]
)
def test_variants_compute_what_the_program_computes(name, source, params, sizes, indices):
    original = parse_file(REPO / source, params=params)
    base = baseline(original, sizes, indices=indices)
    made = variants(original, COUNT, seed=44)
    assert len(made) == COUNT, f"{name}: only {len(made)} distinct variants"
    compiled: set[object] = set()
    checked: set[object] = set()
    refusal: str | None = None  # the original's refusal, asked for at the first variant's
    for i, (module, applied) in enumerate(made):
        label = f"{name} variant {i} ({', '.join(applied)})"
        text = str(module)
        try:
            spelled = parse_text(text, f"{name}.variant{i}.mlir")
            if i < PARTITIONED:  # through the warp-specialized kernel's passes as well
                whole = Validator(parse_text(text, f"{name}.variant{i}.mlir"), base, label)
                whole.apply_all(tile_pipeline(PARTITION_STOP, schedule="heuristic"))
            validator = Validator(spelled, base, label)
            validator.apply_all(tile_pipeline(), known=checked)
            key = validator.unnamed or unnamed_key(spelled)
            if key in compiled or len(compiled) >= COMPILED:
                continue
            compiled.add(key)
            has_dot = any(isinstance(o, tile.DotOp) for o in spelled.walk())
            res = compile_module(spelled, start="warp-specialize", schedule="heuristic")
        except CompileError as e:
            message = str(e)
            assert re.match(r"^[^\s:]+:\d+:\d+: error: ", message), f"{label}: {message}"
            if any(re.search(p, message) for p in REFUSALS):
                continue
            if refusal is None:
                refusal = _refusal(source, params)
            assert _reason(message) == refusal, f"{label} refused: {message}"
            continue
        # the tensor cores exactly where the program multiplies tiles
        assert ("wgmma.mma_async" in res.ptx) == has_dot, label


def _reason(message: str) -> str:
    """A located error's message without its location."""
    return re.sub(r"^[^\s:]+:\d+:\d+: error: ", "", message)


def _refusal(source: str, params) -> str:
    """The reason the original program is refused for ("" where it compiles): a variant
    of a program the compiler refuses may be refused for the same reason."""
    try:
        compile_file(REPO / source, params=params, schedule="heuristic")
    except CompileError as e:
        return _reason(str(e))
    return ""


def test_every_rewrite_applies_somewhere_in_the_corpus():
    """Each rewrite kind has sites in the corpus (a generator that never applies a kind
    tests nothing)."""
    module = parse_file(REPO / "examples" / "attention_causal.mlir")
    for kind in REWRITES:
        _, applied = variant(module, seed=1, steps=1, kinds=(kind,))
        assert applied == [kind], kind


def test_a_variant_is_another_text_with_the_same_meaning():
    """A variant prints differently and computes the same (here a hoist and a shift,
    checked directly in the interpreter)."""
    from tawac.check import run
    from tawac.compiler import run_pipeline

    module = parse_file(REPO / "examples" / "attention.mlir")
    sizes = {"B": 1, "H": 2, "S": 333, "D": 128, "scale_log2e": 0.18}
    base = baseline(module, sizes)
    spelled, applied = variant(module, seed=3, steps=4, kinds=("hoist", "sink", "shift"))
    assert applied and str(spelled) != str(module)
    run_pipeline(spelled, "canonicalize")  # the grid is read from program_id x * 128
    kernel = next(o for o in spelled.walk() if isinstance(o, tile.KernelOp))
    got = run(kernel, base.inputs)
    assert bool((got["o"].nan_to_num() == base.expected["o"].nan_to_num()).all())
