"""The corpus of tile programs for measuring schedules (corpus/corpus.json):
the examples, the test kernels and variants (tile shapes, dtypes, B's major order,
epilogues, batched, chained dots, attention block shapes, head dims, causal, GQA).

- the manifest is well-formed: unique names, existing sources, known tags, and each
  entry's "sizes" and "check_sizes" name exactly the kernel's symbolic dimensions and
  scalar arguments (read from the compiled sidecar's "args");
- every entry compiles to PTX under the heuristic planner (no GPU needed);
- on a Hopper GPU (marked `gpu`, skipped elsewhere), every entry compiled by each planner
  (the solver's when OR-Tools is installed) runs at its "check_sizes" and matches the
  float32 reference interpreter, as `tawac run` checks it.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import pytest
from gpu_util import requires_gpu

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "corpus" / "corpus.json"

KEYS = {"name", "source", "defines", "sizes", "check_sizes", "loop", "tags"}
#: Keys an entry may have: "indices", the values of i32 index arguments the benchmark
#: gives (`tawac.runtime.runner.index_values`) instead of zeros; "trace_every", the
#: sampling period of its traced build, over the run's (`calibrate.entry_trace_every`:
#: loops of a few iterations a program need every second one sampled).
OPTIONAL = {"indices", "trace_every"}
TAGS = frozenset(
    {
        "example",
        "test-kernel",
        "variant",
        "gemm",
        "attention",
        "bf16",
        "fp16",
        "fp8",
        "a-mmajor",
        "b-kmajor",
        "b-nmajor",
        "epilogue",
        "batched",
        "chained",
        "causal",
        "gqa",
        "grouped",
        "rows",
    }
)
#: The kernel families: exactly one per entry (`rows`: kernels without MMAs, a row's
#: reductions and elementwise math).
FAMILIES = ("gemm", "attention", "rows")
#: The origin tags: exactly one per entry (an example or test kernel compiled with
#: kernel parameters of its own is a variant).
ORIGINS = ("example", "test-kernel", "variant")
#: The element-type tags, each with the sidecar dtypes that bear it out.
DTYPES = {"bf16": {"bf16"}, "fp16": {"f16"}, "fp8": {"f8E4M3FN", "f8E5M2"}}
#: The tile programs that must each be in the corpus (every example and test kernel).
KERNEL_SOURCES = ("examples/*.mlir", "tests/data/*.mlir", "tests/data/variants/*.mlir")

PROGRAMS: list[dict] = json.loads(MANIFEST.read_text())["programs"]
NAMES = [p["name"] for p in PROGRAMS]
BY_NAME = {p["name"]: p for p in PROGRAMS}


def _params(entry: dict) -> dict[str, int] | None:
    return dict(entry["defines"]) or None


def test_manifest_is_well_formed():
    assert len(PROGRAMS) >= 30
    assert len(set(NAMES)) == len(NAMES), sorted(n for n in NAMES if NAMES.count(n) > 1)
    seen = {}
    for e in PROGRAMS:
        name = e.get("name")
        assert KEYS <= set(e) <= KEYS | OPTIONAL, (name, sorted(set(e) ^ KEYS))
        assert isinstance(name, str) and name, e
        src = e["source"]
        assert isinstance(src, str) and not Path(src).is_absolute() and src.endswith(".mlir"), name
        assert (REPO / src).is_file(), (name, src)
        defines = e["defines"]
        assert isinstance(defines, dict), name
        for k, v in defines.items():
            assert isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool), (name, k)
        key = (src, tuple(sorted(defines.items())))
        assert key not in seen, f"{name} and {seen.get(key)} are the same program"
        seen[key] = name
        for field in ("sizes", "check_sizes"):
            sizes = e[field]
            assert isinstance(sizes, dict) and sizes, (name, field)
            for k, v in sizes.items():
                ok = isinstance(v, numbers.Real) and not isinstance(v, bool)
                assert isinstance(k, str) and ok, (name, field, k, v)
        assert e["loop"] is None or e["loop"] in e["sizes"], (name, e["loop"])
        every = e.get("trace_every", 2)  # 1 stamps spans, not iterations: no interval
        assert isinstance(every, int) and not isinstance(every, bool) and every >= 2, name
        tags = e["tags"]
        assert isinstance(tags, list) and len(set(tags)) == len(tags), (name, tags)
        assert set(tags) <= TAGS, (name, sorted(set(tags) - TAGS))
        assert sum(t in tags for t in ORIGINS) == 1, (name, tags)
        assert sum(t in tags for t in FAMILIES) == 1, (name, tags)
        assert set(tags) & set(DTYPES), (name, tags)
        origin = (
            "variant"
            if defines or src.startswith("corpus/")
            else "example"
            if src.startswith("examples/")
            else "test-kernel"
        )
        assert origin in tags, (name, origin, tags)


def test_corpus_holds_every_kernel_and_program():
    """Every example and test kernel is an entry, and every program in corpus/ is used."""
    sources = {e["source"] for e in PROGRAMS}
    kernels = {str(p.relative_to(REPO)) for g in KERNEL_SOURCES for p in REPO.glob(g)}
    assert kernels - sources == set(), "add these to corpus/corpus.json"
    written = {str(p.relative_to(REPO)) for p in (REPO / "corpus").glob("*.mlir")}
    assert written - sources == set(), "programs in corpus/ that no entry uses"


def _required(sidecar: dict) -> set[str]:
    """The names a run needs: every symbolic dimension of a tensor argument and every
    scalar argument."""
    names = set()
    for spec in sidecar["args"]:
        if spec["kind"] == "scalar":
            names.add(spec["name"])
        else:
            names.update(d for d in spec.get("dims") or [] if isinstance(d, str))
    return names


@pytest.mark.parametrize("name", NAMES)
def test_entry_compiles_and_its_sizes_name_every_argument(name):
    from tawac.driver import compile_file
    from tawac.runtime.runner import tensor_shape

    e = BY_NAME[name]
    res = compile_file(REPO / e["source"], params=_params(e), cubin=False, schedule="heuristic")
    assert ("wgmma.mma_async" in res.ptx) == ("rows" not in e["tags"])
    side = res.sidecar
    given = side.get("kernel_params", {})
    assert given == {**given, **e["defines"]}, given
    required = _required(side)
    for field in ("sizes", "check_sizes"):
        sizes = e[field]
        assert set(sizes) == required, (field, sorted(set(sizes) ^ required))
        for spec in side["args"]:
            if spec["kind"] == "tensor":
                assert all(n > 0 for n in tensor_shape(spec, sizes)), (field, spec["name"])
            elif spec["dtype"] != "f32":
                assert isinstance(sizes[spec["name"]], int), (field, spec["name"])
    tensors = [s for s in side["args"] if s["kind"] == "tensor"]
    indices = e.get("indices", {})
    assert set(indices) <= {s["name"] for s in tensors if s["dtype"] == "i32"}, indices
    if indices:
        from tawac.runtime.runner import index_values

        for spec in (s for s in tensors if s["name"] in indices):
            for field in ("sizes", "check_sizes"):
                values = index_values(indices[spec["name"]], tensor_shape(spec, e[field]), e[field])
                assert values.min() >= 0, (field, spec["name"])
    dtypes = {s["dtype"] for s in tensors}
    for tag, names in DTYPES.items():
        if tag in e["tags"]:
            assert dtypes & names, (tag, sorted(dtypes))
    if "batched" in e["tags"]:
        assert all(s["rank"] == 3 for s in tensors), tensors
    if e["loop"] is not None:
        # A size that lengthens the main loop alone sets no output's extent (the grid).
        outputs = [s for s in tensors if "write" in s["access"]]
        assert outputs and all(e["loop"] not in s["dims"] for s in outputs), e["loop"]
        assert any(e["loop"] in s["dims"] for s in tensors if "read" in s["access"])


#: The solver's runs carry the `solver` marker: skipped without OR-Tools (tests/conftest.py).
PLANNERS = ["heuristic", pytest.param("solver", marks=pytest.mark.solver)]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("planner", PLANNERS)
@pytest.mark.parametrize("name", NAMES)
def test_entry_matches_the_interpreter_at_check_sizes(name, planner):
    """`tawac run --size <check_sizes> [-D ...] --schedule <planner>`: random inputs,
    NaN-poisoned outputs, every output against the float32 interpreter."""
    from tawac.driver import compile_cached, kernel_op
    from tawac.runtime.runner import run_kernel_file

    e = BY_NAME[name]
    params = _params(e)

    def compile_fn(path):
        k = compile_cached(path, params=params, schedule=planner)
        return k.cubin, k.sidecar, kernel_op(path, params=params)

    res = run_kernel_file(
        REPO / e["source"], e["check_sizes"], None, compile_fn, warmup_ms=1, rep_ms=1
    )
    assert res["ok"] and not res["nan"], res
