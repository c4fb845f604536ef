"""Structure-aware mutations of tile kernels, deterministic from (seed, index).

Texts are handled as `str` decoded with `surrogateescape`, so any byte survives a round
trip and a mutation may insert bytes that are not UTF-8.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\.)*")
    |(?P<type>![\w.]+<[^<>\n]*>)
    |(?P<ssa>%[\w$.\-]+(?::\d+|\#\d+)?)
    |(?P<sym>@[\w$.]+)
    |(?P<hex>0x[0-9a-fA-F]+)
    |(?P<float>-?\d+\.\d*(?:[eE][+-]?\d+)?|-?\d+[eE][+-]?\d+)
    |(?P<int>-?\d+)
    |(?P<ident>[A-Za-z_][\w$.]*)
    |(?P<ws>\s+)
    |(?P<punct>.)""",
    re.VERBOSE | re.DOTALL,
)
SHAPE = re.compile(r"tensor<((?:(?:\d+|\?)x)+)")
# A kernel's parameter declaration and its entries (tawac.support.params).
PARAMS = re.compile(r"\bparams\s*=\s*\{([^{}]*)\}")
PARAM = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*=\s*(\d+)")
DTYPES = "bf16 f16 f32 f64 i1 i8 i16 i32 i64 index f8E4M3FN f8E5M2".split()
DTYPE = re.compile(rf"(?:(?<![\w.])|(?<=[\d?]x))({'|'.join(DTYPES)})(?!\w)")
DIALECTS = ("tile", "arith", "scf", "math", "aref", "hopper", "ptx", "func", "builtin")
OPTIONAL_WORDS = [
    "transpose_rhs",
    "transpose_lhs",
    "fastmath<arcp>",
    "fastmath<fast>",
    "fastmath<reassoc>",
]
WORD_GROUPS = [["max", "sum", "min", "prod"], ["slt", "sle", "sgt", "sge", "eq", "ne", "ult"]]
PROGRAM_ID = re.compile(r"(tile\.program_id\s+)([A-Za-z_]\w*)")
HUGE_INT = "9" * 5000
INTS = [0, 1, -1, 32, 48, 96, 192, 224, 256, 2**31, 2**63 - 1, 2**64]
FLOATS = ["1e39", "-1e39", "0.0", "nan", "inf", "1e-50", "9" * 400 + ".5", "1.0e+9999"]
DIMS = ["32", "64", "96", "128", "192", "224", "256", "0", "1", "?", str(2**40), "9" * 30]
STRAYS = list("\"'{}()<>[],:=%@#^!\\x?") + ["\x00", "\x1b", "\x07", "\udcff", "\udcc3"]


class Token(NamedTuple):
    kind: str
    start: int
    end: int
    text: str


def tokenize(text: str) -> list[Token]:
    """Every token of `text`, whitespace and comments included (they cover the text)."""
    return [
        Token(m.lastgroup or "punct", m.start(), m.end(), m.group()) for m in TOKEN.finditer(text)
    ]


def significant(text: str) -> list[Token]:
    return [t for t in tokenize(text) if t.kind not in ("ws", "comment")]


def _short(s: str, n: int = 24) -> str:
    return repr(s if len(s) <= n else f"{s[:10]}...{s[-4:]}({len(s)} chars)")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


@dataclass
class Corpus:
    """Named kernel texts, and the op names seen in them (by dialect) for op swaps."""

    entries: list[tuple[str, str]]
    ops: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        found: dict[str, set[str]] = {}
        for _, text in self.entries:
            for tok in significant(text):
                name = tok.text.strip('"') if tok.kind == "string" else tok.text
                if tok.kind in ("ident", "string") and name.split(".")[0] in DIALECTS:
                    if re.fullmatch(r"[a-z]+\.[a-z_][\w.]*", name):
                        found.setdefault(name.split(".")[0], set()).add(name)
        self.ops = {d: sorted(names) for d, names in sorted(found.items())}

    @classmethod
    def load(cls, root: str | Path) -> Corpus:
        """examples/*.mlir, tests/data/**/*.mlir, the Triton kernels' TTIR
        (examples/triton/*.ttir, tests/data/triton/*.ttir: compiled as `.ttir`, see
        `source_suffix`), two template instances and the chunks of
        tests/filecheck/**/*.mlir (full-line comments dropped)."""
        root = Path(root)
        entries: list[tuple[str, str]] = []
        files = sorted(root.glob("examples/*.mlir")) + sorted(root.glob("tests/data/**/*.mlir"))
        files += sorted(root.glob("examples/triton/*.ttir"))
        files += sorted(root.glob("tests/data/triton/*.ttir"))
        for path in files:
            entries.append((str(path.relative_to(root)), path.read_text()))
        template = root / "tests/data/attention_template.mlir.in"
        if template.is_file():
            for args in ((128, 128, 128, False), (192, 64, 64, True)):
                name = f"{template.relative_to(root)}{list(args)}"
                entries.append((name, instantiate(template.read_text(), *args)))
        for path in sorted(root.glob("tests/filecheck/**/*.mlir")):
            chunks = re.split(r"^// -----.*\n?", path.read_text(), flags=re.MULTILINE)
            for i, chunk in enumerate(chunks):
                code = "".join(
                    ln for ln in chunk.splitlines(True) if not ln.lstrip().startswith("//")
                )
                if code.strip():
                    entries.append((f"{path.relative_to(root)}#{i}", code.strip("\n") + "\n"))
        if not entries:
            raise ValueError(f"no .mlir kernels under {root}")
        return cls(entries)


def source_suffix(name: str) -> str:
    """The file suffix a mutant of corpus entry `name` is compiled with: `.ttir` for a
    Triton kernel's TTIR (`tawac compile` converts it), else `.mlir`."""
    return ".ttir" if name.split("#")[0].endswith(".ttir") else ".mlir"


def instantiate(text: str, bm: int, bn: int, d: int, causal: bool, dt: str = "bf16") -> str:
    """The attention template, as tests/test_gpu_attention_sweep.py fills it in."""
    sel = "tile.select %{}, %m1, %neg : tensor<{{BM}}x{{BN}}xi1>, tensor<{{BM}}x{{BN}}xf32>"
    subst = {
        "{KVEND}": "arith.addi %m0, %cbm : index" if causal else "arith.addi %S, %c0 : index",
        "{NEED}": f"arith.cmpi sgt, %n_end, {'%m0' if causal else '%S'} : index",
        "{MASK2}": sel.format("in2" if causal else "in1"),
    }
    subst.update({"{BM}": str(bm), "{BN}": str(bn), "{D}": str(d), "{DT}": dt})
    for key, value in subst.items():
        text = text.replace(key, value)
    return text


# --- mutations: (rng, text, corpus) -> (description, new text), or None if not applicable ---

Mutated = tuple[str, str] | None
Mutation = Callable[[random.Random, str, Corpus], Mutated]
MUTATIONS: dict[str, Mutation] = {}


def mutation(fn: Mutation) -> Mutation:
    """Register a mutation under its name with dashes (`line_delete`: `line-delete`)."""
    MUTATIONS[fn.__name__.replace("_", "-")] = fn
    return fn


def _code_lines(text: str) -> tuple[list[str], list[int]]:
    """The lines (each ending in a newline) and the indices of the non-blank ones."""
    lines = [ln if ln.endswith("\n") else ln + "\n" for ln in re.findall(r".*\n|.+$", text)]
    return lines, [i for i, ln in enumerate(lines) if ln.strip()]


@mutation
def line_delete(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    lines, code = _code_lines(text)
    if not code:
        return None
    i = rng.choice(code)
    return f"delete line {i + 1}", "".join(lines[:i] + lines[i + 1 :])


@mutation
def line_duplicate(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    lines, code = _code_lines(text)
    if not code:
        return None
    i = rng.choice(code)
    return f"duplicate line {i + 1}", "".join(lines[:i] + [lines[i]] + lines[i:])


@mutation
def line_swap(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    lines, code = _code_lines(text)
    if len(code) < 2:
        return None
    k = rng.randrange(len(code) - 1)
    i, j = (code[k], code[k + 1]) if rng.random() < 0.5 else sorted(rng.sample(code, 2))
    if lines[i] == lines[j]:
        return None
    lines[i], lines[j] = lines[j], lines[i]
    return f"swap lines {i + 1} and {j + 1}", "".join(lines)


@mutation
def line_move(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    lines, code = _code_lines(text)
    if len(code) < 2:
        return None
    i = rng.choice(code)
    line = lines.pop(i)
    j = rng.randrange(len(lines) + 1)
    lines.insert(j, line)
    return f"move line {i + 1} to {j + 1}", "".join(lines)


def _replace_token(
    rng: random.Random, text: str, kinds: tuple[str, ...], choices: Callable[[str], list[str]]
) -> Mutated:
    toks = [t for t in significant(text) if t.kind in kinds]
    if not toks:
        return None
    tok = rng.choice(toks)
    options = [c for c in choices(tok.text) if c != tok.text]
    new = rng.choice(options)
    desc = f"line {_line_of(text, tok.start)}: {_short(tok.text)} -> {_short(new)}"
    return desc, _splice(text, tok.start, tok.end, new)


def _int_choices(tok: str) -> list[str]:
    try:
        n = int(tok, 0) if len(tok) < 100 else 1
    except ValueError:
        n = 1
    return [str(v) for v in INTS + [n + 1, n - 1, n * 2, n // 2]] + [HUGE_INT]


@mutation
def int_literal(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    return _replace_token(rng, text, ("int", "hex"), _int_choices)


@mutation
def float_literal(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    return _replace_token(rng, text, ("float",), lambda tok: FLOATS)


@mutation
def shape_dim(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    """One dimension of one `tensor<AxBxT>` changed, dropped, or one added."""
    spans = [
        (m.start(1) + d.start(), m.start(1) + d.end())
        for m in SHAPE.finditer(text)
        for d in re.finditer(r"\d+|\?", m.group(1))
    ]
    if not spans:
        return None
    start, end = rng.choice(spans)
    old, how, where = text[start:end], rng.random(), f"line {_line_of(text, start)}"
    if how < 0.1:
        return f"{where}: drop dim {old}", _splice(text, start, end + 1, "")
    if how < 0.2:
        return f"{where}: add dim before {old}", _splice(text, start, start, "64x")
    new = rng.choice([d for d in DIMS if d != old])
    return f"{where}: dim {old} -> {_short(new)}", _splice(text, start, end, new)


@mutation
def retile(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    """One tile size changed everywhere: in shapes and in `arith.constant N : index`; or,
    in a kernel with parameters, one parameter's default (`params = {BLOCK_N = 256}`)."""
    sizes = sorted({d for m in SHAPE.finditer(text) for d in re.findall(r"\d+", m.group(1))})
    declared = PARAMS.search(text)
    params = PARAM.findall(declared.group(1)) if declared is not None else []
    if not sizes and not params:
        return None
    choices = ("1", "2", "8", "16", "32", "64", "96", "128", "192", "256", "512", "4096")
    pick = rng.randrange(len(sizes) + len(params))
    if pick >= len(sizes):
        name, old = params[pick - len(sizes)]
        new = rng.choice([d for d in choices if d != old])
        start, end = declared.span(1)
        body = re.sub(rf"\b{name}\s*=\s*{old}\b", f"{name} = {new}", declared.group(1))
        return f"param {name} {old} -> {new}", _splice(text, start, end, body)
    old = sizes[pick]
    new = rng.choice([d for d in choices if d != old])
    pat = rf"(?<=[<x]){old}(?=x)|(?<=arith\.constant ){old}(?= : index)"
    return f"all {old} -> {new}", re.sub(pat, new, text)


@mutation
def retype(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    """One element type changed everywhere."""
    found = sorted({m.group(1) for m in DTYPE.finditer(text)})
    if not found:
        return None
    old = rng.choice(found)
    new = rng.choice([d for d in DTYPES if d != old])
    return f"all {old} -> {new}", DTYPE.sub(lambda m: new if m[1] == old else m[0], text)


@mutation
def dtype(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    found = list(DTYPE.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    new = rng.choice([d for d in DTYPES if d != m.group(1)])
    desc = f"line {_line_of(text, m.start())}: {m.group(1)} -> {new}"
    return desc, _splice(text, m.start(1), m.end(1), new)


def _ssa_split(text: str) -> tuple[list[Token], list[Token]]:
    """SSA tokens split into definitions (before a line's `=`, or `%x:` arguments) and uses."""
    defs, uses = [], []
    for tok in significant(text):
        if tok.kind != "ssa":
            continue
        line_start = text.rfind("\n", 0, tok.start) + 1
        line_end = text.find("\n", tok.end)
        line = text[line_start : len(text) if line_end < 0 else line_end]
        rel = tok.start - line_start
        after = text[tok.end : tok.end + 3].lstrip()
        head = line.lstrip().startswith("%") and 0 <= rel < line.find("=")
        if head or after.startswith("=") or (after.startswith(":") and not after.startswith("::")):
            defs.append(tok)
        else:
            uses.append(tok)
    return defs, uses


def _rename(rng: random.Random, text: str, pick: list[Token], names: set[str]) -> tuple[str, str]:
    tok = rng.choice(pick)
    others = sorted(names - {tok.text})
    new = rng.choice(others) if others and rng.random() < 0.6 else f"%fz{rng.randrange(100)}"
    desc = f"line {_line_of(text, tok.start)}: {tok.text} -> {new}"
    return desc, _splice(text, tok.start, tok.end, new)


def _rename_ssa(rng: random.Random, text: str, definitions: bool) -> Mutated:
    defs, uses = _ssa_split(text)
    targets = defs if definitions else uses
    if not targets:
        return None
    return _rename(rng, text, targets, {t.text for t in defs + uses})


@mutation
def ssa_use(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    return _rename_ssa(rng, text, definitions=False)


@mutation
def ssa_def(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    return _rename_ssa(rng, text, definitions=True)


@mutation
def op_swap(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    toks = []
    for tok in significant(text):
        name = tok.text.strip('"') if tok.kind == "string" else tok.text
        if tok.kind in ("ident", "string") and len(corpus.ops.get(name.split(".")[0], ())) > 1:
            if name in corpus.ops[name.split(".")[0]]:
                toks.append((tok, name))
    if not toks:
        return None
    tok, name = rng.choice(toks)
    new = rng.choice([n for n in corpus.ops[name.split(".")[0]] if n != name])
    new_text = f'"{new}"' if tok.kind == "string" else new
    desc = f"line {_line_of(text, tok.start)}: {name} -> {new}"
    return desc, _splice(text, tok.start, tok.end, new_text)


@mutation
def token_delete(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    toks = significant(text)
    if not toks:
        return None
    tok = rng.choice(toks)
    desc = f"line {_line_of(text, tok.start)}: delete {_short(tok.text)}"
    return desc, _splice(text, tok.start, tok.end, "")


@mutation
def token_duplicate(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    toks = significant(text)
    if not toks:
        return None
    tok = rng.choice(toks)
    sep = " " if tok.kind not in ("punct",) else ""
    desc = f"line {_line_of(text, tok.start)}: duplicate {_short(tok.text)}"
    return desc, _splice(text, tok.end, tok.end, sep + tok.text)


@mutation
def token_swap(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    toks = significant(text)
    pairs = [(a, b) for a, b in zip(toks, toks[1:], strict=False) if a.text != b.text]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    new = b.text + text[a.end : b.start] + a.text
    desc = f"line {_line_of(text, a.start)}: swap {_short(a.text)} and {_short(b.text)}"
    return desc, _splice(text, a.start, b.end, new)


@mutation
def stray_char(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    toks = significant(text)
    if toks and rng.random() < 0.5:
        pos = rng.choice(toks).start if rng.random() < 0.5 else rng.choice(toks).end
    else:
        pos = rng.randrange(len(text) + 1)
    ch = rng.choice(STRAYS)
    return f"line {_line_of(text, pos)}: insert {ch!r}", _splice(text, pos, pos, ch)


@mutation
def truncate(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    if not text:
        return None
    pos = rng.randrange(len(text))
    return f"truncate at line {_line_of(text, pos)} (char {pos})", text[:pos]


@mutation
def keyword(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    """Remove or add an optional keyword, or change a reduce kind or a cmpi predicate."""
    present = [m for w in OPTIONAL_WORDS for m in re.finditer(rf" {re.escape(w)}(?![\w>])", text)]
    words = [t for t in significant(text) if any(t.text in g for g in WORD_GROUPS)]
    ops = [m for m in re.finditer(r"^[^\n]*?\s[a-z]+\.\w+[^\n]*?( : )", text, re.M)]
    modes = [m for m, ok in (("remove", present), ("add", ops), ("word", words)) if ok]
    if not modes:
        return None
    mode = rng.choice(modes)
    if mode == "remove":
        m = rng.choice(present)
        desc = f"line {_line_of(text, m.start())}: remove {m.group().strip()}"
        return desc, _splice(text, m.start(), m.end(), "")
    if mode == "add":
        m, word = rng.choice(ops), rng.choice(OPTIONAL_WORDS)
        desc = f"line {_line_of(text, m.start(1))}: add {word}"
        return desc, _splice(text, m.start(1), m.start(1), " " + word)
    tok = rng.choice(words)
    group = next(g for g in WORD_GROUPS if tok.text in g)
    new = rng.choice([w for w in group if w != tok.text])
    desc = f"line {_line_of(text, tok.start)}: {tok.text} -> {new}"
    return desc, _splice(text, tok.start, tok.end, new)


@mutation
def program_id(rng: random.Random, text: str, corpus: Corpus) -> Mutated:
    found = list(PROGRAM_ID.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    new = rng.choice([a for a in ("x", "y", "z", "w", "xy", "X", "0") if a != m.group(2)])
    desc = f"line {_line_of(text, m.start())}: program_id {m.group(2)} -> {new}"
    return desc, _splice(text, m.start(2), m.end(2), new)


# Mutations that often keep a kernel valid (so it reaches the passes and the PTX printer)
# are drawn more often than the purely syntactic ones.
WEIGHTS = {"retile": 4, "retype": 2, "program-id": 2, "keyword": 2, "line-swap": 2}


def mutate(rng: random.Random, text: str, corpus: Corpus, kind: str) -> Mutated:
    """Apply one mutation of `kind`; None where it does not apply or changes nothing."""
    res = MUTATIONS[kind](rng, text, corpus)
    if res is None or res[1] == text:
        return None
    return res


def mutant(corpus: Corpus, seed: int, index: int) -> tuple[str, list[str], bytes]:
    """Mutant `index` of campaign `seed`: (source name, mutations applied, bytes).

    Two thirds of the mutants start from a whole kernel file (examples, test data), the
    rest from any corpus entry (most are filecheck chunks: small, often invalid kernels)."""
    rng = random.Random(f"{seed}:{index}")
    whole = [e for e in corpus.entries if not e[0].startswith("tests/filecheck/")]
    name, text = rng.choice(whole if whole and rng.random() < 2 / 3 else corpus.entries)
    done: list[str] = []
    kinds, weights = list(MUTATIONS), [WEIGHTS.get(k, 1) for k in MUTATIONS]
    original = text
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        for _attempt in range(20):
            kind = rng.choices(kinds, weights)[0]
            res = mutate(rng, text, corpus, kind)
            if res is not None and res[1] != original:  # not one undoing the other
                done.append(f"{kind}: {res[0]}")
                text = res[1]
                break
    return name, done, text.encode("utf-8", "surrogateescape")


# `tawac compile` flags a mutant may run with: the pipeline's knobs, valid or not.
OPTION_CHOICES = [
    ["--stages", "0", "1", "2", "3", "4", "8", "-1"],
    ["--mma-depth", "0", "1", "2", "3", "-1"],
    ["--consumer-warp-groups", "0", "1", "2", "3", "4"],
    ["--group-m", "0", "1", "8", "64"],
    ["--no-persistent"],
    ["--no-tile-prefetch"],
    ["--no-coarse-pipeline"],
    ["--pingpong"],
    ["--overlap-epilogue"],
    ["--swap-ab"],
    ["--split-k", "1", "2", "4"],
    ["--ctas-per-sm", "0", "1", "2", "4", "9"],
    ["--no-reuse-slots"],
    ["--no-sink-reductions"],
    ["--no-l2-hints"],
]


def compile_options(seed: int, index: int) -> list[str]:
    """The `tawac compile` flags of mutant `index` of campaign `seed`: none for two
    thirds of the mutants, else one to three of `OPTION_CHOICES`."""
    rng = random.Random(f"{seed}:{index}:options")
    if rng.random() < 2 / 3:
        return []
    flags: list[str] = []
    for choice in rng.sample(OPTION_CHOICES, rng.randint(1, 3)):
        flags += choice if len(choice) == 1 else [choice[0], rng.choice(choice[1:])]
    return flags
