"""Translation validation of the tile-level passes (`tawac.check`): every corpus program,
every Triton example and test kernel, under every option that runs a tile-level pass,
computes the same outputs in the interpreter after each pass as before it; and a pass
broken on purpose is caught, naming the pass, the program and the first differing
element."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from programs import hoisted_mask

from tawac.check import ValidationError, baseline, validate, validate_pipeline
from tawac.compiler import parse_file, parse_text
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = json.loads((REPO / "corpus" / "corpus.json").read_text())["programs"]

#: The option sets that run a tile-level pass (beyond the defaults: canonicalize,
#: group-heads, widen, guard-masks): each pass refuses a kernel it does not apply to
#: with a located error, which is fine here.
CONFIGS = {
    "default": {},
    "split-k": {"split_k": 3},
    "stream-k": {"stream_k": 2},
    "swap-ab": {"swap_ab": True},
    "widen-2": {"widen": 2},
    "no-group-heads": {"group_heads": False},
}

#: Sizes of the Triton kernels' dimensions and scalars (corpus/triton.json).
TRITON: dict[str, dict] = json.loads((REPO / "corpus" / "triton.json").read_text())["kernels"]


def _validate_all(module, sizes, program, indices=None) -> dict[str, str]:
    """Each configuration's outcome: the passes that changed the IR, or the refusal."""
    base = baseline(module, sizes, indices=indices)
    out: dict[str, str] = {}
    known: set[object] = set()  # checked results: an option set giving the same IR skips
    for name, options in CONFIGS.items():
        label = f"{program} [{name}]"
        try:
            done = validate_pipeline(module, base, program=label, known=known, **options)
        except CompileError as e:
            assert ":" in str(e), f"{program} [{name}]: refusal without a location: {e}"
            out[name] = "refused"
            continue
        out[name] = ",".join(v.pass_name for v in done if v.changed) or "unchanged"
    return out


@pytest.mark.parametrize("entry", PROGRAMS, ids=[p["name"] for p in PROGRAMS])
def test_tile_passes_keep_the_meaning_of_every_corpus_program(entry):
    module = parse_file(REPO / entry["source"], params=entry["defines"] or None)
    outcomes = _validate_all(module, entry["check_sizes"], entry["name"], entry.get("indices"))
    assert outcomes["default"] != "refused", outcomes


def test_the_triton_table_names_every_triton_kernel():
    on_disk = {
        str(p.relative_to(REPO))
        for p in [*REPO.glob("examples/triton/*.ttir"), *REPO.glob("tests/data/triton/*.ttir")]
    }
    # refused as a whole (README "From Triton", "Not yet"): an fp8 output
    refused = {"tests/data/triton/matmul_fp8_out.ttir"}
    persistent = {"examples/triton/matmul_persistent.ttir"}
    assert on_disk - refused - persistent == set(TRITON)


@pytest.mark.parametrize("path", sorted(TRITON))
def test_tile_passes_keep_the_meaning_of_every_triton_kernel(path):
    module = parse_file(REPO / path)
    outcomes = _validate_all(module, TRITON[path], path)
    assert outcomes["default"] != "refused", outcomes


# ---- the validator catches a broken pass


GQA_CAUSAL = REPO / "corpus" / "attention_gqa_causal.mlir"
GQA_SIZES = {"B": 1, "H": 8, "S": 333, "D": 128, "scale_log2e": 0.18, "HK": 2}


ATTN_SIZES = {"B": 1, "H": 2, "S": 333, "D": 128, "scale_log2e": 0.18}


def test_the_hoisted_mask_attention_is_guarded_and_validated():
    module = parse_text(hoisted_mask("attention.mlir"), "hoisted.mlir")
    v = validate(module, "guard-masks", ATTN_SIZES, program="hoisted")
    assert v.changed and v.outputs == ["o"]


def test_a_guard_that_never_masks_is_caught(monkeypatch):
    """guard-masks broken on purpose: its "some element is false" condition always false,
    so the ragged key block keeps the keys past the end."""
    from xdsl.dialects import arith

    from tawac.passes import guard_masks

    def never(mask, b):
        return b._add(arith.ConstantOp.from_int_and_width(0, 1))

    monkeypatch.setattr(guard_masks, "_some_false", never)
    module = parse_text(hoisted_mask("attention.mlir"), "hoisted.mlir")
    with pytest.raises(ValidationError) as info:
        validate(module, "guard-masks", ATTN_SIZES, program="hoisted")
    err = info.value
    assert err.pass_name == "guard-masks" and err.program == "hoisted"
    assert err.difference.output == "o" and len(err.difference.index) == 4
    assert "guard-masks changed the meaning of hoisted: o[" in str(err)


def test_the_whole_pipeline_at_once_still_names_the_broken_pass(monkeypatch):
    """`Validator.apply_all` (the tile passes as one pipeline, one check) with guard-masks
    broken as above: the error names guard-masks, found by running the passes again one
    by one from the module as given; the module it was given is the pipeline's result."""
    from xdsl.dialects import arith

    from tawac.check import Validator, tile_pipeline
    from tawac.passes import guard_masks

    module = parse_text(hoisted_mask("attention.mlir"), "hoisted.mlir")
    base = baseline(module, ATTN_SIZES)
    good = Validator(module.clone(), base, "hoisted").apply_all(tile_pipeline())
    assert good.changed and good.max_error < 1e-3
    assert good.pass_name.endswith(",guard-masks,sink-reductions")

    def never(mask, b):
        return b._add(arith.ConstantOp.from_int_and_width(0, 1))

    monkeypatch.setattr(guard_masks, "_some_false", never)
    with pytest.raises(ValidationError) as info:
        Validator(module.clone(), base, "hoisted").apply_all(tile_pipeline())
    assert info.value.pass_name == "guard-masks" and info.value.program == "hoisted"


def test_grouping_the_heads_of_a_causal_gqa_is_caught(monkeypatch):
    """group-heads with its former legality check (only the products feeding the Q/O
    tiles looked at: the causal mask's rows and the key loop's end stay at the ungrouped
    rows) is caught on the causal grouped-query attention."""
    from tawac.analysis.scalars import constant_int
    from tawac.passes import group_heads

    module = parse_file(GQA_CAUSAL, params={"GROUP": 4})
    validate(module, "group-heads", GQA_SIZES, program="gqa")  # kept ungrouped: agrees

    def former(kernel, head_axis, accesses):
        muls = list(dict.fromkeys(a.indices[-2].owner for a in accesses))
        return muls, constant_int(muls[0].rhs)

    monkeypatch.setattr(group_heads, "_block_rows", former)
    with pytest.raises(ValidationError) as info:
        validate(module, "group-heads", GQA_SIZES, program="gqa")
    assert info.value.pass_name == "group-heads" and info.value.difference.output == "o"


def test_tawac_check_reports_each_pass_and_fails_on_a_broken_one(monkeypatch, tmp_path):
    """`tawac check`: one line per tile-level pass and per variant, exit 0; with
    guard-masks broken on purpose, one located `check failed` line naming the pass and
    exit 1."""
    from click.testing import CliRunner
    from xdsl.dialects import arith

    from tawac.passes import guard_masks
    from tawac.tools.cli import main

    src = tmp_path / "hoisted.mlir"
    src.write_text(hoisted_mask("attention.mlir"))
    args = ["check", str(src), "--size", "B=1,H=2,S=333,D=128", "--variants", "2"]
    ok = CliRunner().invoke(main, args)
    assert ok.exit_code == 0, ok.output
    # the passes' result is interpreted once, after the last that changed the program
    assert "guard-masks: changed (checked with the passes after it)" in ok.output, ok.output
    assert ok.output.count("agrees (max error") == 1, ok.output
    assert "variant 1 (" in ok.output

    def never(mask, b):
        return b._add(arith.ConstantOp.from_int_and_width(0, 1))

    monkeypatch.setattr(guard_masks, "_some_false", never)
    bad = CliRunner().invoke(main, args)
    assert bad.exit_code == 1, bad.output
    lines = [ln for ln in bad.output.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "check failed: guard-masks changed the meaning" in lines[0]


def test_equal_infinities_and_nans_are_no_difference():
    """Found by the fuzz campaign (seed 23, mutant 3250: an accumulator starting at
    1.0e+9999, inf): outputs that are the same infinity before and after a pass agree;
    an infinity of the other sign, or a NaN where there was a number, does not."""
    import math

    import torch

    from tawac.check.validate import compare

    b = torch.tensor([[math.inf, -math.inf, math.nan, 1.0]])
    assert compare({"c": b}, {"c": b.clone()}, {"c": "bf16"})[0] is None
    flipped = torch.tensor([[-math.inf, -math.inf, math.nan, 1.0]])
    diff, _ = compare({"c": b}, {"c": flipped}, {"c": "bf16"})
    assert diff is not None and diff.index == (0, 0)
    nan = torch.tensor([[math.inf, -math.inf, math.nan, math.nan]])
    diff, _ = compare({"c": b}, {"c": nan}, {"c": "bf16"})
    assert diff is not None and diff.index == (0, 3)


def test_check_at_sizes_the_kernel_refuses_is_a_usage_error():
    """`tawac check --size` that breaks a launch check the source states (a paged cache
    whose page is not the key block) says so and exits 2, no internal error."""
    from click.testing import CliRunner

    from tawac.tools.cli import main

    src = Path(__file__).resolve().parents[1] / "examples" / "attention_paged.mlir"
    args = ["check", str(src), "--size", "B=1,H=8,L=64,D=128,P=4,HK=1,PAGE=64,MAXP=2"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert "Invalid value for '--size': kc.shape[2] (PAGE) is 64: the kernel needs 128" in (
        res.output
    )
    assert "internal" not in res.output
