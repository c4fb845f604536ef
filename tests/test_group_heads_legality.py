"""`group-heads` groups only where the rewrite keeps the program's meaning: the IR before
and after the pass, run in the reference interpreter on random CPU inputs at ragged
sizes, give the same output. A causal grouped-query attention's mask rows and key-loop
end follow the query block as one head's rows (`program_id(x) * BM` computed again for
them, as a kernel converted from Triton does): stacking G heads' rows would put them at
the wrong positions, so such a kernel keeps one program per query head. The non-causal
grouped-query kernels are still grouped, and still agree."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tawac.analysis.grid import GROUP_ATTR, infer_grid  # noqa: E402
from tawac.compiler import parse_file, parse_text, run_pipeline  # noqa: E402
from tawac.dialects import tile  # noqa: E402
from tawac.passes.group_heads import KEPT_ATTR, group_kernel  # noqa: E402
from tawac.runtime.interpret import interpret  # noqa: E402
from tawac.runtime.plans import compute_grid  # noqa: E402
from tawac.schedule import group_heads as rule  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CAUSAL = REPO / "corpus" / "attention_gqa_causal.mlir"
DECODE = REPO / "examples" / "attention_decode.mlir"
TRITON = REPO / "tests" / "data" / "triton"
LOG2E = math.log2(math.e)


def _kernel(module) -> tile.KernelOp:
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _before_after(path: Path, params: dict | None = None):
    """The kernel as parsed and the kernel after `group-heads` (on a copy)."""
    module = parse_file(path, params=params)
    after = module.clone()
    run_pipeline(after, "group-heads")
    return _kernel(module), _kernel(after)


def _run(kern: tile.KernelOp, tensors: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
    """The kernel's output tensor (its last tensor argument, filled with NaN first) over
    the grid its stores imply at these shapes."""
    names = [a.name_hint for a in kern.body.block.args]
    out = names[3]
    args = {n: t.clone() for n, t in tensors.items()}
    args[out] = torch.full_like(args[out], float("nan"))
    shapes = {n: tuple(t.shape) for n, t in args.items()}
    grid = compute_grid(infer_grid(kern), shapes)
    interpret(kern, [args[n] for n in names[:4]] + [scale], grid)
    return args[out].float()


def _inputs(names: list[str], b: int, h: int, hk: int, rows: int, keys: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, rows, 128, generator=g).bfloat16()
    k = torch.randn(b, hk, keys, 128, generator=g).bfloat16()
    v = torch.randn(b, hk, keys, 128, generator=g).bfloat16()
    o = torch.zeros(b, h, rows, 128).bfloat16()
    return dict(zip(names, (q, k, v, o), strict=True))


def _reference(q, k, v, causal: bool) -> torch.Tensor:
    g = q.shape[1] // k.shape[1]
    kk, vv = k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    s = q.float() @ kk.transpose(-1, -2) / math.sqrt(128)
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vv


def _agree(before, after, tensors, scale, causal):
    """The outputs before and after the pass are the same, and right."""
    want = _reference(*list(tensors.values())[:3], causal=causal)
    got_before = _run(before, tensors, scale)
    got_after = _run(after, tensors, scale)
    assert (got_before - want).abs().max().item() < 2e-2
    assert (got_after - got_before).abs().max().item() < 2e-2


@pytest.mark.parametrize("group", [2, 4, 8])
def test_causal_gqa_program_is_kept_and_agrees(group):
    """corpus/attention_gqa_causal.mlir at G = 2, 4, 8, S = 333 (the last query block
    and key block ragged): the pass leaves it ungrouped, and the outputs agree."""
    before, after = _before_after(CAUSAL, {"GROUP": group})
    assert GROUP_ATTR not in after.attributes
    assert not any(isinstance(o, tile.LoadOp) and tile.stack_of(o) > 1 for o in after.walk())
    tensors = _inputs(["q", "k", "v", "o"], 2, 2 * group, 2, 333, 333, seed=group)
    _agree(before, after, tensors, LOG2E / math.sqrt(128), causal=True)


def test_causal_gqa_triton_kernel_is_kept_and_agrees():
    """`gqa_causal_fwd` (tests/data/triton/unseen_attention.py, G = 4) converted from its
    TTIR: the mask's rows and the loop's end are `start_m * BLOCK_M` products of their
    own; kept ungrouped, and the outputs agree."""
    before, after = _before_after(TRITON / "unseen_gqa_causal.ttir")
    assert GROUP_ATTR not in after.attributes
    tensors = _inputs(["Q", "K", "V", "Out"], 1, 8, 2, 333, 333, seed=7)
    _agree(before, after, tensors, 1 / math.sqrt(128), causal=True)


@pytest.mark.parametrize(
    ("path", "used_by"),
    [
        (CAUSAL, "arith.addi, arith.cmpi, tile.iota"),
        (TRITON / "unseen_gqa_causal.ttir", "arith.addi, tile.iota"),
    ],
)
def test_the_kept_kernel_says_why(path, used_by):
    """`tawac.group_heads_kept` names the other uses of the query block's first row."""
    _, after = _before_after(path)
    why = after.attributes.get(KEPT_ATTR)
    assert why is not None, after.attributes
    assert f"(program id x)'s first row is used by {used_by}," in why.data


def test_the_query_block_read_again_is_a_use_too():
    """A second `tile.program_id x` (the mask's rows read from their own program id, not
    from the Q/O tiles' product) keeps the kernel ungrouped: every program id of the
    axis counts."""
    text = CAUSAL.read_text().replace(
        "%r0 = arith.muli %pid_m, %bm : index",
        "%pid_m2 = tile.program_id x\n  %r0 = arith.muli %pid_m2, %bm : index",
    )
    assert "%pid_m2" in text
    module = parse_text(text, "c.mlir")
    assert not group_kernel(_kernel(module))
    assert (
        "is used by arith.addi, arith.cmpi, tile.iota" in _kernel(module).attributes[KEPT_ATTR].data
    )


def test_the_rule_groups_whole_groups_that_divide_the_rows():
    assert [rule.heads_per_program(g, 64) for g in (1, 2, 3, 8, 16)] == [1, 2, 1, 8, 16]
    assert rule.why_not(8, 64) is None
    assert rule.why_not(3, 64) == "a group of 3 heads does not divide the query tile's 64 rows"


@pytest.mark.parametrize(
    ("path", "names", "scale", "sizes"),
    [
        (DECODE, ["q", "k", "v", "o"], LOG2E / math.sqrt(128), (2, 16, 2, 5, 333)),
        (
            TRITON / "unseen_gqa.ttir",
            ["Q", "K", "V", "Out"],
            1 / math.sqrt(128),
            (1, 16, 2, 70, 333),
        ),
    ],
    ids=["attention_decode", "unseen_gqa"],
)
def test_non_causal_gqa_is_still_grouped_and_agrees(path, names, scale, sizes):
    before, after = _before_after(path)
    assert GROUP_ATTR in after.attributes
    assert KEPT_ATTR not in after.attributes
    b, h, hk, rows, keys = sizes
    tensors = _inputs(names, b, h, hk, rows, keys, seed=rows)
    _agree(before, after, tensors, scale, causal=False)


def test_explain_says_why_the_heads_are_not_grouped():
    from click.testing import CliRunner

    from tawac.tools import cli

    res = CliRunner().invoke(cli.main, ["explain", str(CAUSAL)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "query heads: one program each, not grouped: the query block (program id x)'s" in text
    assert "grouped by" not in text
