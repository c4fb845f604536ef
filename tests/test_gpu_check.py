"""On the GPU, the compiler checking itself: the kernels of rewritten and respelled tile
programs compute what the original program computes.

- A causal grouped-query attention, the tile program (corpus/attention_gqa_causal.mlir)
  and the Triton kernel (`gqa_causal_fwd` of tests/data/triton/unseen_attention.py,
  through `tawac.triton.compile`), at head groups 2, 4 and 8 and ragged lengths, with
  `group-heads` and without, against a float32 torch reference.
- An attention whose key mask is computed in the loop body from a splat hoisted before
  the loop, and a causal one whose row iota is hoisted (guard-masks' inputs), at the
  defaults, at a ragged length.
- Two variants of every corpus program (`tawac.check.variants`), compiled from their
  printed text, against the original program's interpreter output on the same inputs.

Each test's compile step is a function of its own (`*_build`, `variant_jobs`), which
runs without a GPU."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest
from gpu_util import load_module, requires_gpu
from programs import hoisted_mask

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import check_corpus  # noqa: E402 (the sweep's compile pool and reference)

PROGRAMS = json.loads((REPO / "corpus" / "corpus.json").read_text())["programs"]
GQA_CAUSAL = REPO / "corpus" / "attention_gqa_causal.mlir"
TRITON_ATTENTION = REPO / "tests" / "data" / "triton" / "unseen_attention.py"
TOL = check_corpus.TOL
LOG2E = 1.4426950408889634

#: Query heads per K/V head, and the two ragged sequence lengths.
GROUPS = (2, 4, 8)
LENGTHS = (333, 1000)
#: Batches and query heads of the GQA runs (H / G K/V heads).
B, H, D = 2, 8, 128

#: Variants per corpus program, their seed, and the shards the programs are split into
#: (one test each: with `-n 4` they compile side by side, each in its own pool).
VARIANTS = 2
VARIANT_SEED = 44
SHARDS = 4


# ---- the compile steps (no GPU needed)


def gqa_tile_build(group: int, group_heads: bool) -> tuple[bytes, dict]:
    """The causal GQA tile program with GROUP = `group`, compiled (cubin, sidecar)."""
    from tawac.compiler import compile_file

    res = compile_file(GQA_CAUSAL, params={"GROUP": group}, cubin=True, group_heads=group_heads)
    return res.cubin, res.sidecar


def gqa_triton_source():
    """The Python module of tests/data/triton/unseen_attention.py (needs Triton)."""
    return load_module(TRITON_ATTENTION, "unseen_attention")


def gqa_triton_config(group: int) -> dict:
    cfg = gqa_triton_source().TTIR_VARIANTS["unseen_gqa_causal"]
    return {**cfg, "constexprs": {**cfg["constexprs"], "G": group}}


def gqa_triton_build(group: int, group_heads: bool):
    """The Triton kernel's TTIR at G = `group` compiled as `tawac.triton.compile` compiles
    it (through the compile cache, which its first call then reads)."""
    from tawac.driver import compile_cached
    from tawac.triton import ttir_of

    cfg = gqa_triton_config(group)
    ttir = ttir_of(cfg["kernel"], cfg["signature"], cfg["constexprs"])
    return compile_cached("gqa_causal_fwd.ttir", text=ttir, cubin=True, group_heads=group_heads)


HOISTED = {
    "hoisted_key_mask": lambda: hoisted_mask("attention.mlir"),
    "hoisted_rows": lambda: hoisted_mask("attention_causal.mlir"),
}
HOISTED_SIZES = {"B": 2, "H": 2, "S": 333, "D": 128, "scale_log2e": 0.12751743}


def hoisted_build(name: str) -> tuple[str, bytes, dict]:
    """(text, cubin, sidecar) of a hoisted-mask attention compiled at the defaults."""
    from tawac.compiler import compile_source

    text = HOISTED[name]()
    res = compile_source(text, f"{name}.mlir", cubin=True)
    return text, res.cubin, res.sidecar


def shard(i: int) -> list[dict]:
    return PROGRAMS[i::SHARDS]


def variant_jobs(programs: list[dict]) -> list[dict]:
    """`check_corpus.compile_job`s of `VARIANTS` variants of each program (their printed
    text, at the default options); each job's key is (program, variant number, the
    rewrites applied)."""
    from tawac.check.variants import variants
    from tawac.compiler import parse_file

    jobs = []
    for p in programs:
        module = parse_file(REPO / p["source"], params=p["defines"] or None)
        made = variants(module, VARIANTS, seed=VARIANT_SEED)
        assert len(made) == VARIANTS, f"{p['name']}: only {len(made)} distinct variants"
        for i, (m, applied) in enumerate(made):
            jobs.append({
                "key": (p["name"], i, ",".join(applied)),
                "text": str(m),
                "filename": f"{p['name']}.variant{i}.mlir",
                "params": None,
                "options": {},
            })  # fmt: skip
    return jobs


def compile_variants(programs: list[dict], workers: int | None = None) -> dict[str, list[dict]]:
    """Every variant of `programs` compiled in a process pool: per program, its results."""
    if workers is None:
        workers = max(2, (os.cpu_count() or 2) // SHARDS)
    out: dict[str, list[dict]] = {p["name"]: [] for p in programs}
    for res in check_corpus.compile_many(variant_jobs(programs), workers):
        out[res["key"][0]].append(res)
    return out


# ---- the GPU tests


def gqa_reference(q, k, v, scale: float):
    """Causal attention in float32, the K/V heads repeated for their query heads."""
    import torch

    g = q.shape[1] // k.shape[1]
    k, v = (t.float().repeat_interleave(g, 1) for t in (k, v))
    s = q.float() @ k.transpose(-1, -2) * scale
    n = q.shape[2]
    keep = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    s = s.masked_fill(~keep, -math.inf)
    return torch.softmax(s, -1) @ v


def _gqa_inputs(group: int, seqlen: int, seed: int):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, H, seqlen, D, device="cuda", generator=gen).bfloat16()
    k, v = (
        torch.randn(B, H // group, seqlen, D, device="cuda", generator=gen).bfloat16()
        for _ in range(2)
    )
    o = torch.full_like(q, math.nan)
    return q, k, v, o


def _assert_close(o, ref, label: str) -> None:
    import torch

    from tawac.runtime.runner import relative_error

    assert not bool(torch.isnan(o).any()), f"{label}: NaN in the output"
    err = relative_error(o, ref)
    assert err <= TOL, f"{label}: relative error {err:.3g}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("group_heads", [True, False], ids=["group-heads", "no-group-heads"])
@pytest.mark.parametrize("group", GROUPS)
def test_causal_gqa_tile_program(group, group_heads):
    from tawac.runtime import load_kernel

    cubin, sidecar = gqa_tile_build(group, group_heads)
    kernel = load_kernel(cubin, sidecar)
    scale = 1 / math.sqrt(D)
    for seqlen in LENGTHS:
        q, k, v, o = _gqa_inputs(group, seqlen, seed=seqlen + group)
        kernel(q, k, v, o, scale * LOG2E)
        import torch

        torch.cuda.synchronize()
        label = f"G={group} S={seqlen} group_heads={group_heads}"
        _assert_close(o, gqa_reference(q, k, v, scale), label)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("group_heads", [True, False], ids=["group-heads", "no-group-heads"])
@pytest.mark.parametrize("group", GROUPS)
def test_causal_gqa_triton_kernel(group, group_heads):
    pytest.importorskip("triton")
    import torch

    import tawac.triton

    gqa_triton_build(group, group_heads)  # the compile (the call below reads it cached)
    cfg = gqa_triton_config(group)
    fn = tawac.triton.compile(
        cfg["kernel"],
        signature=cfg["signature"],
        constexprs=cfg["constexprs"],
        group_heads=group_heads,
    )
    scale = 1 / math.sqrt(D)
    for seqlen in LENGTHS:
        q, k, v, o = _gqa_inputs(group, seqlen, seed=seqlen * group)
        strides = [*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3]]
        fn[(math.ceil(seqlen / 128), H, B)](q, k, v, o, scale, seqlen, *strides)
        torch.cuda.synchronize()
        label = f"triton G={group} S={seqlen} group_heads={group_heads}"
        _assert_close(o, gqa_reference(q, k, v, scale), label)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", sorted(HOISTED))
def test_hoisted_mask_attention(name):
    from tawac.compiler import parse_text
    from tawac.dialects import tile

    text, cubin, sidecar = hoisted_build(name)
    op = next(o for o in parse_text(text, f"{name}.mlir").walk() if isinstance(o, tile.KernelOp))
    ref = check_corpus.Reference(op, HOISTED_SIZES, seed=3)
    got = ref.run(cubin, sidecar)
    assert got["ok"], f"{name}: {got}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("index", range(SHARDS), ids=[f"shard{i}" for i in range(SHARDS)])
def test_variants_of_the_corpus_agree_with_the_original(index):
    """Each variant's kernel, on the inputs made from the original program's signature,
    stores what the original program computes in the interpreter (within `TOL`)."""
    from tawac.driver import kernel_op

    programs = shard(index)
    compiled = compile_variants(programs)
    failures = []
    for p in programs:
        op = kernel_op(REPO / p["source"], params=p["defines"] or None)
        ref = check_corpus.Reference(op, p["check_sizes"], seed=1, indices=p.get("indices"))
        for res in sorted(compiled[p["name"]], key=lambda r: r["key"][1]):
            label = f"{p['name']} variant {res['key'][1]} ({res['key'][2]})"
            if res["status"] != "ok":
                failures.append(f"{label}: {res['status']}: {res['message']}")
                continue
            got = ref.run(res["cubin"], res["sidecar"])
            if not got["ok"]:
                failures.append(
                    f"{label}: max error {got['max_error']:.3g}, NaN in {got['nan_outputs']}"
                    + (f" ({got['message']})" if "message" in got else "")
                )
    assert not failures, "\n".join(failures)
