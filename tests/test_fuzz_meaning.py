"""The fuzzer's meaning checks (`tawac.fuzz.meaning`): which mutants are checked, at which
sizes, with which options, and why one is not checked."""

from __future__ import annotations

from pathlib import Path

from tawac.fuzz import meaning
from tawac.fuzz.meaning import Check, check_meaning, load_checks, pipeline_options, selected
from tawac.support.options import KNOBS, PipelineOptions

REPO = Path(__file__).resolve().parent.parent
GEMM = (REPO / "examples" / "gemm.mlir").read_text()
ATTENTION = (REPO / "examples" / "attention.mlir").read_text()
SMALL_GEMM = Check("examples/gemm.mlir", "gemm", {"M": 130, "N": 200, "K": 72})
SMALL_ATTENTION = Check(
    "examples/attention.mlir", "attention", {"B": 1, "H": 1, "S": 200, "D": 128, "scale_log2e": 0.2}
)


def test_flags_become_the_options_tawac_compile_runs_with():
    defaults = PipelineOptions()
    assert pipeline_options([]) == {k.name: getattr(defaults, k.name) for k in KNOBS}
    got = pipeline_options(["--swap-ab", "--split-k", "2", "--no-persistent", "--stages", "3"])
    assert PipelineOptions(**got) == PipelineOptions(
        swap_ab=True, split_k=2, persistent=False, stages=3
    )


def test_the_checked_share_is_drawn_from_seed_and_index():
    picks = [i for i in range(4000) if selected(23, i, 0.25)]
    assert 850 < len(picks) < 1150
    assert picks == [i for i in range(4000) if selected(23, i, 0.25)]  # reproducible
    assert picks != [i for i in range(4000) if selected(24, i, 0.25)]
    assert not any(selected(23, i, 0.0) for i in range(100))
    assert all(selected(23, i, 1.0) for i in range(100))


def test_the_sizes_are_those_of_the_source_without_defines():
    checks = load_checks(REPO)
    attention = checks["examples/attention.mlir"]
    assert attention.program == "attention_d128_128x128"
    assert attention.sizes == {"B": 2, "H": 2, "S": 1000, "D": 128, "scale_log2e": 0.12751743}
    assert checks["examples/attention_paged.mlir"].indices == {
        "lens": "MAXP*PAGE",
        "table": "arange",
    }
    assert not any(s.startswith("tests/filecheck/") for s in checks)
    # the Triton kernels' sizes come from corpus/triton.json
    gqa = checks["tests/data/triton/unseen_gqa_causal.ttir"]
    assert gqa.sizes is not None and gqa.sizes["seqlen"] == 333
    assert Check.from_json(attention.to_json()) == attention


def test_an_accepted_mutant_is_checked_under_its_flags():
    verdict, detail = check_meaning(GEMM, "src.mlir", [], SMALL_GEMM)
    assert verdict == "checked", detail
    verdict, detail = check_meaning(GEMM, "src.mlir", ["--split-k", "2"], SMALL_GEMM)
    assert verdict == "checked", detail
    # the tile-level split, then the warp-specialized kernel's passes (to lower-aref)
    assert detail.startswith("passes that changed it: split-k, warp-specialize, plan"), detail


def test_a_mutant_the_sizes_no_longer_fit_is_unchecked():
    renamed_dim = GEMM.replace('"K"]', '"L"]')
    assert renamed_dim != GEMM
    verdict, detail = check_meaning(renamed_dim, "src.mlir", [], SMALL_GEMM)
    assert verdict == "unchecked" and detail.startswith("sizes: a dimension of"), detail
    renamed_scalar = ATTENTION.replace("%scale_log2e", "%scale2")
    verdict, detail = check_meaning(renamed_scalar, "src.mlir", [], SMALL_ATTENTION)
    assert (verdict, detail) == ("unchecked", "sizes: scalar 'scale2' is not one of the sizes")
    verdict, detail = check_meaning(GEMM, "src.mlir", [], Check("tests/filecheck/x.mlir#0"))
    assert verdict == "unchecked" and detail.startswith("no-sizes:")


def test_a_check_too_large_or_too_slow_is_unchecked(monkeypatch):
    huge = Check("examples/gemm.mlir", "gemm", {"M": 1 << 13, "N": 1 << 13, "K": 64})
    verdict, detail = check_meaning(GEMM, "src.mlir", [], huge)
    assert verdict == "unchecked" and detail.startswith("work: 'c' would have"), detail
    many = Check("examples/gemm.mlir", "gemm", {"M": 1 << 11, "N": 1 << 11, "K": 64})
    monkeypatch.setattr(meaning, "MAX_WORK", 1 << 20)
    verdict, detail = check_meaning(GEMM, "src.mlir", [], many)
    assert (verdict, detail) == ("unchecked", "work: 128 programs x 32768-element tiles")
    monkeypatch.undo()
    verdict, detail = check_meaning(GEMM, "src.mlir", [], SMALL_GEMM, seconds=0.001)
    assert verdict == "unchecked" and detail.startswith("time: over 0.001 s"), detail
