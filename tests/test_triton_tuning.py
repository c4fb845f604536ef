"""Tuning tables for `tawac.triton` functions (`tawac.triton.load_table`,
`TritonFunction.table_options`, `tawac.tools.tune_triton`): an entry gives the options of the
calls nearest its bucket among the functions compiled with its constexprs, the user's
options win, a stale or foreign table is refused; on the GPU, `tune` times the
candidates of the tutorial's causal attention, writes the table, and a function compiled
with it runs the entry's options and is correct against torch."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from gpu_util import load_module, requires_gpu  # noqa: E402

import tawac.triton as tt  # noqa: E402
from tawac.schedule.tuning import TABLE_FORMAT, TuningTableError, source_sha256  # noqa: E402
from tawac.support.diagnostics import CompileError  # noqa: E402
from tawac.tools.tune_triton import _merge, candidates, close  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _function(causal: bool = True, path: Path = REPO / "examples/triton/attention.py", **kw):
    mod = load_module(path)
    cfg = mod.TTIR_VARIANTS["attention_causal"] if causal else mod.TTIR
    consts = {k: v for k, v in cfg["constexprs"].items() if not k.startswith("stride_")}
    consts.update(kw.pop("constexprs", {}))
    kw.setdefault("tuning", None)  # not the shipped table beside the source
    return tt.compile(cfg["kernel"], signature=cfg["signature"], constexprs=consts, **kw)


def _args(z, h, n, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(z, h, n, 128, generator=g).half().to(device) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    m = torch.full((z, h, n), float("nan"), device=device)
    return (q, k, v, 0.125, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), z, h)


def _shaped(z, h, n):
    """`_args`'s arguments unfilled: the same shapes, strides, dtypes and storage, for
    what reads only those and the integers (`options_for`, `table_options`; filling
    16k keys of 32 heads took seconds)."""
    q, k, v, o = (torch.empty(z, h, n, 128, dtype=torch.half) for _ in range(4))
    m = torch.empty(z, h, n)
    return (q, k, v, 0.125, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), z, h)


def _table(fn, *entries) -> dict:
    return {
        "format": TABLE_FORMAT,
        "kernel": "_attn_fwd",
        "source_sha256": source_sha256(tt.function_source(fn.fn)),
        "args": [],
        "entries": list(entries),
    }


LONG = {"bucket": {"Z": 1, "H": 32, "N_CTX": 8192}, "constexprs": {"STAGE": 3},
        "options": {"widen": 0, "persistent": False}}  # fmt: skip
SHORT = {"bucket": {"Z": 4, "H": 32, "N_CTX": 1024}, "constexprs": {"STAGE": 3},
         "options": {"widen": 0}}  # fmt: skip


def test_the_nearest_entry_gives_its_options_and_the_users_win():
    plain = _function()
    table = _table(plain, LONG, SHORT)
    fn = _function(tuning=table)
    args = _args(1, 2, 4096)  # N_CTX 4096 compiled in: nearer 8192 than 1024 with Z 1
    assert fn.table_sizes(args)["N_CTX"] == 4096 and fn.table_sizes(args)["Z"] == 1
    assert fn.options_for(*args) == {"widen": 0, "persistent": False}
    assert fn.specialize(*args) is not plain.specialize(*args)
    short = _function(tuning=table, constexprs={"N_CTX": 1024})
    assert short.options_for(*_shaped(4, 32, 1024)) == {"widen": 0}
    mine = _function(tuning=table, persistent=True)
    assert mine.options_for(*args) == {"widen": 0, "persistent": True}
    assert plain.options_for(*args) == {}


def test_an_entry_applies_only_to_the_constexprs_it_was_tuned_with():
    fn = _function(causal=False, tuning=_table(_function(), LONG))
    assert fn.constexprs["STAGE"] == 1
    assert fn.table_options(_args(1, 2, 4096)) == {}
    assert tt.entry_applies(LONG, {"STAGE": 3, "N_CTX": 1}) and not tt.entry_applies(LONG, {})


def test_a_foreign_stale_or_malformed_table_is_refused():
    fn = _function()
    with pytest.raises(TuningTableError, match="sets kernel parameters"):
        _function(tuning=_table(fn, {**LONG, "params": {"BLOCK_N": 64}}))
    with pytest.raises(TuningTableError, match="'constexprs' must be an object"):
        _function(tuning=_table(fn, {**LONG, "constexprs": [3]}))
    with pytest.raises(TuningTableError, match="is the table of matmul, not of _attn_fwd"):
        _function(tuning={**_table(fn, LONG), "kernel": "matmul"})
    with pytest.warns(UserWarning, match="another version of _attn_fwd"):
        stale = _function(tuning={**_table(fn, LONG), "source_sha256": "0" * 64})
    assert stale.table is None
    with pytest.raises(TuningTableError, match="bucket size"):
        _function(tuning=_table(fn, {**LONG, "bucket": {"N_CTX": 3000}}))


def test_auto_reads_the_table_beside_the_functions_source(tmp_path):
    src = tmp_path / "attention_copy.py"
    shutil.copy(REPO / "examples/triton/attention.py", src)
    fn = _function(path=src, tuning="auto")
    where = tt.table_path(fn.fn)
    assert where == tmp_path / "attention_copy._attn_fwd.tune.json"
    assert fn.table is None  # no file yet
    where.write_text(json.dumps(_table(fn, LONG)))
    tuned = _function(path=src, tuning="auto")
    assert tuned.table_options(_args(1, 2, 4096))["persistent"] is False
    assert _function(path=src, tuning=None).table is None


def test_the_shipped_table_runs_the_causal_tutorial_as_a_plain_grid_from_2k_keys():
    """`examples/triton/attention._attn_fwd.tune.json` (scripts/tune_triton_attention.py,
    H100): read by default; causal at 2k-8k keys a plain grid, at 1k and 16k persistent;
    not causal, the epilogue under the next tile's first MMA at 1k keys, the default
    elsewhere. A change to attention.py makes it stale (retune)."""
    table = json.loads((REPO / "examples/triton/attention._attn_fwd.tune.json").read_text())
    picks: dict[tuple[bool, int], dict] = {}
    for e in table["entries"]:
        n, causal = e["bucket"]["N_CTX"], e["constexprs"]["STAGE"] == 3
        fn = _function(causal, constexprs={"N_CTX": n}, tuning="auto")
        assert fn.table is not None, "the shipped table is stale: rerun the tuning script"
        picks[(causal, n)] = fn.options_for(*_shaped(e["bucket"]["Z"], 32, n))
    persistent = {n: o.get("persistent", True) for (c, n), o in picks.items() if c}
    assert persistent == {1024: True, 2048: False, 4096: False, 8192: False, 16384: True}
    overlap = {n: o.get("overlap_epilogue", False) for (c, n), o in picks.items() if not c}
    assert overlap == {1024: True, 2048: False, 4096: False, 8192: False, 16384: False}
    assert all("persistent" not in o for (c, _), o in picks.items() if not c)


def test_candidates_start_with_the_default_and_check_their_options():
    c = candidates({"persistent": [True, False], "chain_loops": [True]})
    assert c[0].is_default and [x.options for x in c[1:]] == [
        {"persistent": True, "chain_loops": True},
        {"persistent": False, "chain_loops": True},
    ]
    with pytest.raises(CompileError, match="unknown option 'persistant'"):
        candidates({"persistant": [False]})
    with pytest.raises(CompileError, match="option stages must be >= 0"):
        candidates({"stages": [-1]})
    with pytest.raises(CompileError, match="option persistent must be true or false"):
        candidates({"persistent": [0]})


def test_close_compares_each_tensor_with_the_defaults():
    a = torch.tensor([1.0, 2.0, float("nan")])
    assert close([a, 3], [a.clone(), 3]) is None
    assert close([a + 0.01], [a]) is None  # within tawac tune's 2% relative error
    assert "relative error" in close([a + 1.0], [a])
    assert "NaN" in close([a], [torch.zeros(3)])  # NaN where the default has a number


def test_merge_replaces_the_entry_of_its_bucket_and_constexprs_only():
    fn = _function()
    old = _table(fn, LONG, {**LONG, "constexprs": {"STAGE": 1}})
    new = {**LONG, "options": {"widen": 0}}
    merged = _merge(old, new, fn)
    assert merged["entries"] == [new, {**LONG, "constexprs": {"STAGE": 1}}]  # in its place
    assert merged["source_sha256"] == old["source_sha256"]


def test_tune_refuses_a_size_that_is_no_argument():
    fn = _function()
    with pytest.raises(CompileError, match="N_CTXX is no integer argument or constexpr"):
        fn.tune(*_args(1, 2, 4096), space={"persistent": [False]}, sizes=["N_CTXX"])


def _reference(args):
    q, k, v = (a.float() for a in args[:3])
    n = q.shape[2]
    s = (q @ k.transpose(-1, -2)) * args[3]
    s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), -math.inf)
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1) / math.log(2)


@pytest.mark.gpu
@requires_gpu
def test_tune_writes_a_table_that_a_function_compiled_with_it_follows(tmp_path):
    n = 1024
    fn = _function(constexprs={"N_CTX": n})
    args = _args(1, 4, n, device="cuda")
    path = tmp_path / "attn.tune.json"
    result = fn.tune(
        *args, space={"persistent": [False]}, sizes=["Z", "H", "N_CTX"], rounds=2, rep_ms=5,
        table=path,
    )  # fmt: skip
    assert [r.candidate.label() for r in result.rows] == ["default", "persistent=false"]
    assert all(r.ok for r in result.rows), result.lines()
    entry = result.entry
    assert entry["bucket"] == {"Z": 1, "H": 4, "N_CTX": 1024}
    assert entry["constexprs"]["STAGE"] == 3 and "N_CTX" not in entry["constexprs"]
    assert entry["options"] in ({"widen": 0}, {"widen": 0, "persistent": False})
    saved = json.loads(path.read_text())
    assert saved["entries"] == [entry] and saved == fn.table
    tuned = _function(constexprs={"N_CTX": n}, tuning=path)
    assert tuned.options_for(*args) == entry["options"]
    call = _args(1, 4, n, device="cuda", seed=1)
    tuned(*call)
    ref, lse = _reference(call)
    assert (call[5].float() - ref).abs().max().item() < 2e-2
    assert (call[4] - lse).abs().max().item() < 1e-3
