"""Equivalent spellings of the Triton kernels (`tests/data/triton/spellings/*.py`, their
TTIR from Triton's front end beside them): the tutorial matmul with other program
orders, hoisted or `tl.where` masks, block pointers, `+=` accumulation; a FlashAttention
forward (causal or not) with other masks, grids, exponentials and scales; a grouped-query
attention with the K/V head found another way. Each `.ttir` either converts and computes
what its family computes (torch in float32, on the CPU interpreter at ragged sizes, also
after the tile-level passes) and compiles to PTX, or is refused with one located error at
its Python line, for a reason `REFUSED` records (README "From Triton", "Not yet")."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tawac.analysis.grid import infer_grid  # noqa: E402
from tawac.analysis.identity import argument_name  # noqa: E402
from tawac.check import tile_pipeline  # noqa: E402
from tawac.compiler import parse_text, run_pipeline  # noqa: E402
from tawac.dialects import tile  # noqa: E402
from tawac.runtime.interpret import interpret  # noqa: E402
from tawac.support.diagnostics import CompileError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "triton" / "spellings"
SPELLINGS = sorted(p.stem for p in DATA.glob("*.ttir"))
#: The tile-level passes that rewrite the program (before warp specialization).
TILE_PASSES = ",".join(tile_pipeline())  # the tile-level passes of `tawac compile`

#: stem -> (its .py, the @triton.jit function, a text on the refused line after the
#: function's `def`, the error's message, why).
REFUSED = {
    "attention": (
        "attention.py",
        "attn_bias",
        "qk += tl.where(cols[None, :] < seqlen, 0.0",
        "a broadcast of a float tile other than a vector to 2-d",
        "an additive key-mask bias: a float row (tl.where of a 1 x N mask and scalars) "
        "broadcast over the scores; only vectors of row statistics broadcast",
    ),
    "attention_causal": (
        "attention.py",
        "attn_bias",
        "qk += tl.where(cols[None, :] < seqlen, 0.0",
        "a broadcast of a float tile other than a vector to 2-d",
        "as `attention`: the key-mask bias comes before the causal one",
    ),
    "attention_masks_otherwise_causal": (
        "attention.py",
        "attn_masks_otherwise",
        "qk = tl.where(offs_m[:, None] - cols[None, :] >= 0",
        "that is not one index range plus a scalar",
        "the causal mask as a difference of positions (`rows - cols >= 0`): a mask side "
        "is one index range plus a scalar (`rows >= cols` converts)",
    ),
    "matmul_k_remaining": (
        "matmul.py",
        "mm_k_remaining",
        "a = tl.load(a_ptrs, mask=k_mask[None, :]",
        "a mask computed by tt.expand_dims",
        "a 1-d mask expanded to the tile (`k_mask[None, :]`): masks are compared on "
        "expanded offsets (`offs_k[None, :] < k_left`)",
    ),
    "gqa_kv_head_grid": (
        "gqa.py",
        "gqa_kv_head_grid",
        "acc.to(tl.bfloat16), mask=offs_m[:, None] < seqlen_q)",
        "an output block index computed from two program ids",
        "the query head `off_kh * G + off_bg % G` from grid axes y and z: each output block "
        "index comes from one program id",
    ),
}

#: stem -> the exact symptom of a tawac limitation or bug the spelling exposes.
PTX_XFAIL: dict[str, str] = {}

COMPUTED = [s for s in SPELLINGS if s not in REFUSED]


def _family(stem: str) -> str:
    if stem.startswith("matmul"):
        return "matmul"
    if stem.startswith("gqa"):
        return "gqa"
    return "causal" if stem.endswith("_causal") else "attention"


def _path(stem: str) -> Path:
    return DATA / f"{stem}.ttir"


def _kernel(module) -> tile.KernelOp:
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _grid(kern: tile.KernelOp, args: list) -> tuple[int, int, int]:
    """The logical grid the kernel's stores imply at these arguments' shapes."""
    shapes = {
        argument_name(a, kern): tuple(t.shape)
        for a, t in zip(kern.body.block.args, args, strict=True)
        if isinstance(t, torch.Tensor)
    }
    out = []
    for g in infer_grid(kern):
        if "const" in g:
            out.append(g["const"])
        else:
            ref = g["cdiv"]
            out.append(math.ceil(shapes[ref["arg"]][ref["dim"]] / g["by"]))
    return tuple(out)  # type: ignore[return-value]


def _attention(q, k, v, causal: bool):
    s = q.float() @ k.float().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v.float()


def _cases(family: str):
    """(arguments, output index, float32 reference) of the family at ragged sizes."""
    g = torch.Generator().manual_seed(44)
    if family == "matmul":
        for m, n, k in ((200, 300, 130), (1, 17, 70)):
            a, b = torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
            c = torch.full((m, n), float("nan")).half()
            yield [a, b, c], 2, a.float() @ b.float()
    elif family == "gqa":
        b, h, hk, d = 1, 32, 4, 128
        for rows, keys in ((5, 333), (70, 129)):
            q = torch.randn(b, h, rows, d, generator=g).bfloat16()
            k, v = (torch.randn(b, hk, keys, d, generator=g).bfloat16() for _ in range(2))
            o = torch.full_like(q, float("nan"))
            ref = _attention(
                q, k.repeat_interleave(h // hk, 1), v.repeat_interleave(h // hk, 1), False
            )
            yield [q, k, v, o, 1 / math.sqrt(d)], 3, ref
    else:
        b, h, s, d = 1, 4, 333, 128  # H = 4 heads is a constexpr of the kernels
        q, k, v = (torch.randn(b, h, s, d, generator=g).bfloat16() for _ in range(3))
        o = torch.full_like(q, float("nan"))
        yield [q, k, v, o, 1 / math.sqrt(d)], 3, _attention(q, k, v, family == "causal")


def _check(kern: tile.KernelOp, family: str, what: str) -> None:
    for args, out, ref in _cases(family):
        interpret(kern, args, _grid(kern, args))
        got = args[out].float()
        assert not torch.isnan(got).any(), f"{what}: outputs left unwritten"
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        assert err < 2e-2, f"{what}: relative error {err:.3g} at {tuple(args[out].shape)}"


def test_there_are_spellings_of_each_family():
    assert {_family(s) for s in COMPUTED} == {"matmul", "attention", "causal", "gqa"}
    assert len(COMPUTED) >= 10
    assert set(REFUSED) <= set(SPELLINGS) and set(PTX_XFAIL) <= set(COMPUTED)


@pytest.mark.parametrize("stem", COMPUTED)
def test_the_spelling_computes_its_family(stem):
    """The converted kernel, and the kernel after the tile-level passes (grouped heads,
    widened tiles, guarded masks), against torch in float32."""
    path = _path(stem)
    module = parse_text(path.read_text(), str(path.relative_to(ROOT)))
    _check(_kernel(module), _family(stem), "converted")
    run_pipeline(module, TILE_PASSES)
    _check(_kernel(module), _family(stem), f"after {TILE_PASSES}")


def _ptx_params():
    for stem in COMPUTED:
        marks = (
            [pytest.mark.xfail(strict=True, reason=PTX_XFAIL[stem])] if stem in PTX_XFAIL else []
        )
        yield pytest.param(stem, marks=marks, id=stem)


@pytest.mark.parametrize("stem", list(_ptx_params()))
def test_the_spelling_compiles_to_ptx(stem):
    from tawac.driver import compile_module
    from tawac.driver import parse_text as driver_parse

    path = _path(stem)
    res = compile_module(
        driver_parse(path.read_text(), str(path.relative_to(ROOT))), schedule="heuristic"
    )
    dots = 1 if _family(stem) == "matmul" else 2
    assert res.ptx.count("wgmma.mma_async") >= dots


def _line_of(py: str, function: str, text: str) -> int:
    """The 1-based line of the first `text` after `def function(` in the .py."""
    lines = (DATA / py).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_the_spelling_is_refused_at_its_python_line(stem):
    py, function, text, message, _why = REFUSED[stem]
    path = _path(stem)
    with pytest.raises(CompileError) as info:
        parse_text(path.read_text(), str(path.relative_to(ROOT)))
    where = f"tests/data/triton/spellings/{py}:{_line_of(py, function, text)}:"
    assert str(info.value).startswith(where), str(info.value)
    assert "error: convert-ttir: " in str(info.value) and message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("source", sorted(p.name for p in DATA.glob("*.py")))
def test_the_ttir_is_what_tritons_front_end_writes(source):
    """Each committed `.ttir` is what `scripts/ttir_dump.py` writes from its `.py` now (its
    paths relative to the repository)."""
    pytest.importorskip("triton")
    import importlib.util

    spec = importlib.util.spec_from_file_location("ttir_dump", ROOT / "scripts" / "ttir_dump.py")
    dump = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dump)
    for stem, cfg in dump.configs(DATA / source).items():
        # Triton's cache may answer with the TTIR of the same source in another checkout
        text = re.sub(r'"[^"]*/(tests/data/triton/spellings/)', r'"\1', dump.ttir_of(cfg))
        assert _path(stem).read_text() == text, stem
