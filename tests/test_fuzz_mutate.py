"""The fuzzer's own parts: the tokenizer and mutations of tawac/fuzz/mutate.py, and the
classification and child isolation of tawac/fuzz/harness.py (with a fake compiler)."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

import tawac.tools.cli
from tawac.fuzz import harness
from tawac.fuzz.harness import Outcome, Result, classify, execute, normalize
from tawac.fuzz.mutate import MUTATIONS, Corpus, compile_options, mutant, mutate, tokenize

REPO = Path(__file__).resolve().parent.parent
GEMM = (REPO / "examples" / "gemm.mlir").read_text()


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.load(REPO)


# --- tokenizer and corpus ---------------------------------------------------------------------


def test_tokenizer_kinds_and_coverage():
    text = (
        '%x:2 = "tile.load"(%a#1) <{n = -12 : i64}> : '
        'tensor<128x64xbf16> -1.5e+30 2.0 0x1F @k !tile.tensor<?x?xbf16, ["M"]> tile.dot // c\n'
    )
    toks = tokenize(text)
    assert "".join(t.text for t in toks) == text
    kinds = {t.text: t.kind for t in toks}
    assert kinds["%x:2"] == "ssa"
    assert kinds["%a#1"] == "ssa"
    assert kinds['"tile.load"'] == "string"
    assert kinds["-12"] == "int"
    assert kinds["-1.5e+30"] == "float"
    assert kinds["2.0"] == "float"
    assert kinds["0x1F"] == "hex"
    assert kinds["@k"] == "sym"
    assert kinds['!tile.tensor<?x?xbf16, ["M"]>'] == "type"
    assert kinds["tile.dot"] == "ident"
    assert kinds["// c"] == "comment"


def test_corpus_entries(corpus):
    names = [name for name, _ in corpus.entries]
    assert "examples/gemm.mlir" in names
    assert "tests/data/variants/a_transposed.mlir" in names
    assert any(n.startswith("tests/filecheck/dialects/tile-invalid.mlir#") for n in names)
    assert sum(n.startswith("tests/data/attention_template.mlir.in") for n in names) == 2
    for name, text in corpus.entries:
        assert "{BM}" not in text and "// CHECK" not in text and "// RUN:" not in text, name
    assert "tile.store" in corpus.ops["tile"] and "arith.mulf" in corpus.ops["arith"]


# --- mutations --------------------------------------------------------------------------------


def test_mutant_is_deterministic(corpus):
    assert mutant(corpus, 7, 123) == mutant(corpus, 7, 123)
    many = {mutant(corpus, 7, i)[2] for i in range(40)}
    assert len(many) >= 35
    assert mutant(corpus, 7, 5) != mutant(corpus, 8, 5)


def test_mutants_are_mutated(corpus):
    texts = dict(corpus.entries)
    for i in range(60):
        name, done, data = mutant(corpus, 0, i)
        assert 1 <= len(done) <= 3
        assert data != texts[name].encode(), (i, done)


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_each_kind_changes_the_text(kind, corpus):
    changed = 0
    for seed in range(10):
        res = mutate(random.Random(seed), GEMM, corpus, kind)
        if res is None:
            continue
        desc, new = res
        assert new != GEMM and desc
        changed += 1
    assert changed >= 5, kind


def test_kinds_do_what_they_say(corpus):
    rng = random.Random(1)
    desc, new = mutate(rng, GEMM, corpus, "op-swap")
    old_op, new_op = desc.split(": ")[1].split(" -> ")
    assert old_op.split(".")[0] == new_op.split(".")[0]
    assert new.count(new_op) == GEMM.count(new_op) + 1
    desc, new = mutate(rng, GEMM, corpus, "truncate")
    assert GEMM.startswith(new) and len(new) < len(GEMM)
    desc, new = mutate(rng, GEMM, corpus, "line-delete")
    assert new.count("\n") == GEMM.count("\n") - 1
    seen = set()
    literal = (REPO / "examples" / "attention_causal.mlir").read_text()  # no parameters
    for seed in range(20):
        desc, new = mutate(random.Random(seed), GEMM if seed % 2 else literal, corpus, "retile")
        if desc.startswith("param "):  # the example's tiles are parameters
            name, rest = desc.removeprefix("param ").split(" ", 1)
            old, size = rest.split(" -> ")
            assert f"{name} = {size}" in new and f"{name} = {old}" not in new
        else:
            old, size = desc.removeprefix("all ").split(" -> ")
            assert f"tensor<{size}x" in new or f"x{size}x" in new
        seen.add(desc.split(" ")[0])
    assert seen == {"param", "all"}


def test_non_utf8_and_huge_numbers_are_possible(corpus):
    datas = [mutant(corpus, 0, i)[2] for i in range(1500)]
    bad = 0
    for d in datas:
        try:
            d.decode("utf-8")
        except UnicodeDecodeError:
            bad += 1
    assert bad > 0
    assert any(b"9" * 5000 in d for d in datas)


# --- classification ---------------------------------------------------------------------------

LOC = "/tmp/x/src.mlir:3:7: "


@pytest.mark.parametrize(
    ("outcome", "cls"),
    [
        (Outcome(0, out_files=["k.json", "k.ptx"]), "accepted"),
        (Outcome(1, stderr=LOC + "error: tile.dot: bad\n"), "rejected"),
        (Outcome(1, stderr="error: expected exactly one tile.kernel, found 0\n"), "rejected"),
        (Outcome(2, stderr="error: internal compiler error: ValueError: x\n"), "internal"),
        (Outcome(1, stderr="error: internal compiler error: KeyError: 3\n"), "internal"),
        (Outcome(2, stderr="Usage: tawac ...\n"), "internal"),
        (Outcome(1, stderr="Traceback (most recent call last):\n  x\nE: y\n"), "traceback"),
        (
            Outcome(
                0, stdout="Traceback (most recent call last):\n", out_files=["k.json", "k.ptx"]
            ),
            "traceback",
        ),
        (Outcome(None, timed_out=True), "hang"),
        (Outcome(None, signal=signal.SIGSEGV), "crash"),
        (Outcome(3, stderr="error: x\n"), "crash"),
        (Outcome(1, stderr=LOC + "error: x\n", out_files=["k.json"]), "partial-output"),
        (Outcome(1, stderr=LOC + "error: x\n", out_files=[".k.json.ab12cd"]), "partial-output"),
        (Outcome(1, stderr="error: x\n", out_files=["cwd/k.ptx"]), "partial-output"),
        (Outcome(1, stderr=LOC + "error: x\n" + LOC + "error: y\n"), "bad-diagnostic"),
        (Outcome(1, stdout="hello\n", stderr=LOC + "error: x\n"), "bad-diagnostic"),
        (Outcome(1, stderr="something went wrong\n"), "bad-diagnostic"),
        (Outcome(1, stderr=""), "bad-diagnostic"),
        (Outcome(0, out_files=["k.ptx"]), "bad-output"),
        (Outcome(0, out_files=["k.json", "k.ptx", ".k.ptx.xyz"]), "bad-output"),
    ],
)
def test_classify(outcome, cls):
    assert classify(outcome)[0] == cls


def test_signatures_group_alike_findings():
    def sig(o: Outcome) -> str:
        return Result(0, "s", [], b"", o, *classify(o)).signature

    a = sig(
        Outcome(
            2,
            stderr="/tmp/a/src.mlir:3:4: error: internal compiler error: "
            "ValueError: min() arg 12 of 'x' (set TAWAC_DEBUG=1 for a traceback)\n",
        )
    )
    b = sig(
        Outcome(
            2,
            stderr="/tmp/b/src.mlir:9:1: error: internal compiler error: "
            "ValueError: min() arg 7 of 'yy' (set TAWAC_DEBUG=1 for a traceback)\n",
        )
    )
    assert a == b == "internal: ValueError: min() arg N of '_'"
    tb = 'Traceback (most recent call last):\n  File "/x/tawac/p.py", line 3, in go\nKeyError: 3\n'
    assert sig(Outcome(70, stderr=tb)) == "traceback: KeyError: N (in go, p.py)"
    assert normalize("tensor<128x64xbf16> %acc_i @gemm") == "tensor<NxNxbf16> %_ @_"


# --- the forked child, with a fake compiler ---------------------------------------------------


def _fake_main(args, prog_name):
    """Behaves as the source file asks: each mode one way of breaking the rule."""
    src, out = Path(args[1]), Path(args[3])
    mode = src.read_text().strip()
    if mode == "ok":
        out.write_text("// ptx\n")
        out.with_suffix(".json").write_text("{}\n")
        sys.exit(0)
    if mode == "hang":
        time.sleep(60)
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "leftover":
        (out.parent / ".k.json.tmp123").write_text("{")
    if mode == "print":
        print("debug output")
    if mode == "memory":
        _ = b"x" * (8 << 30)  # over the child's 4 GiB address-space limit
    print(f"{src}:1:1: error: {mode}", file=sys.stderr)
    sys.exit(1)


def test_children_are_isolated_and_classified(monkeypatch):
    monkeypatch.setattr(tawac.tools.cli, "main", _fake_main)
    modes = ["ok", "hang", "segv", "raise", "leftover", "print", "plain", "memory"]
    items = [(i, "fake", [], m.encode(), []) for i, m in enumerate(modes)]
    got = {modes[r.index]: r for r in execute(items, jobs=4, timeout=2.0)}
    assert {m: r.cls for m, r in got.items()} == {
        "ok": "accepted",
        "hang": "hang",
        "segv": "crash",
        "raise": "traceback",
        "leftover": "partial-output",
        "print": "bad-diagnostic",
        "plain": "rejected",
        "memory": "traceback",
    }
    assert "RuntimeError: boom" in got["raise"].detail
    assert "MemoryError" in got["memory"].detail
    assert got["hang"].outcome.seconds < 10


def test_compile_options_reach_the_child(monkeypatch):
    """A mutant's flags are the child's command line after `-o OUT`; saved with it."""

    def main(args, prog_name):
        print(f"{args[1]}:1:1: error: args {' '.join(args[4:])}", file=sys.stderr)
        sys.exit(1)

    monkeypatch.setattr(tawac.tools.cli, "main", main)
    flags = ["--stages", "1", "--pingpong"]
    (res,) = execute([(0, "fake", [], b"x", flags)])
    assert res.cls == "rejected", res.report()
    assert res.outcome.stderr.strip().endswith("error: args --stages 1 --pingpong")
    assert "options: --stages 1 --pingpong" in res.report()


def test_compile_options_are_seeded_and_mixed():
    runs = [compile_options(3, i) for i in range(300)]
    assert runs == [compile_options(3, i) for i in range(300)]
    with_flags = [r for r in runs if r]
    assert 60 < len(with_flags) < 140, len(with_flags)
    names = {f for r in with_flags for f in r if f.startswith("--")}
    assert {"--stages", "--consumer-warp-groups", "--no-persistent", "--pingpong"} <= names


def test_invalid_ptx_is_a_finding(monkeypatch):
    def main(args, prog_name):
        Path(args[3]).write_text(".version 8.0\n.target sm_90a\nthis is not ptx;\n")
        Path(args[3]).with_suffix(".json").write_text("{}\n")
        sys.exit(0)

    ptxas = harness.find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas")
    monkeypatch.setattr(tawac.tools.cli, "main", main)
    (res,) = execute([(0, "fake", [], b"x", [])], ptxas=ptxas)
    assert res.cls == "invalid-ptx"
    assert "ptxas exit" in res.detail and res.ptx is not None


def test_replay_real_compiler_accepts_an_example():
    res = harness.replay(REPO / "examples" / "gemm.mlir")
    assert res.cls == "accepted", res.report()
