"""A consumer that reads a ring slot with ordinary shared loads (`ld.shared`: a row
kernel's tiles, an epilogue's second matrix, a 1-d tile) releases it only after
`fence.proxy.async.shared::cta` and `bar.warp.sync` (`vectors.slot_reads_done`), then lane
0 of each warp arrives on the slot's `empty` barrier and the producer's next TMA copy may
overwrite it.

Without the fence the release raced the reads: on the H100 and the H200 a 16-row softmax
at 4096 x 32768 had 37-66 wrong rows a launch, all read by the one consumer warp that
shares its SM sub-partition with the producer warp (the last to arrive); a named barrier
over the warp group instead of `bar.warp.sync`, or `bar.warp.sync` after the wait, did
not help; the fence did (docs/design/backend.md, "Releasing a slot read by ordinary
loads"; docs/perf/2026-12-06.md).

On the CPU: the order in the PTX of every example (and of the row examples at 16 rows
a program). On the GPU: the 16-row softmax and RMS norm with a residual at 4096 x 32768,
every element of several launches against float32 torch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ROWS = ["softmax", "rmsnorm", "rmsnorm_residual", "layernorm"]
CASES = [(p.stem, {}) for p in sorted(EXAMPLES.glob("*.mlir"))] + [
    (name, {"BLOCK_M": 16}) for name in ROWS
]
FENCE = "fence.proxy.async.shared::cta;"
RELEASE = re.compile(r"(@%p\d+ )?mbarrier\.arrive\.shared::cta\.b64 _, ")


def unordered_releases(ptx: str) -> list[str]:
    """The places where a slot read by `ld.shared` since the last wait is released
    without the fence and the warp sync: a `bar.warp.sync` after such reads not directly
    after the fence, or a plain arrive after such reads with no `bar.warp.sync` between."""
    problems: list[str] = []
    reads = synced = False
    previous = ""
    for n, line in enumerate(ptx.splitlines(), 1):
        s = line.strip()
        if "mbarrier.try_wait" in s:
            reads = synced = False
        elif s.startswith("ld.shared"):
            reads = True
        elif s == "bar.warp.sync -1;" and reads:
            if previous != FENCE:
                problems.append(f"line {n}: bar.warp.sync after slot reads without {FENCE}")
            synced = True
        elif RELEASE.match(s):
            if reads and not synced:
                problems.append(f"line {n}: a slot released after reads without a warp sync")
            reads = synced = False
        previous = s
    return problems


def test_the_check_finds_a_release_without_the_fence():
    ptx = "\n".join(
        [
            "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;",
            "ld.shared.v4.b32 {%r3, %r4, %r5, %r6}, [%r7];",
            "bar.warp.sync -1;",
            "@%p2 mbarrier.arrive.shared::cta.b64 _, [%r8];",
        ]
    )
    assert unordered_releases(ptx) == [f"line 3: bar.warp.sync after slot reads without {FENCE}"]
    fenced = ptx.replace("bar.warp.sync", f"{FENCE}\nbar.warp.sync")
    assert unordered_releases(fenced) == []
    unsynced = "\n".join(line for line in ptx.splitlines() if "bar.warp" not in line)
    assert unordered_releases(unsynced) == [
        "line 3: a slot released after reads without a warp sync"
    ]


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{n}{p or ''}" for n, p in CASES])
def test_every_slot_read_by_shared_loads_is_fenced_before_its_release(name, params):
    res = compile_file(EXAMPLES / f"{name}.mlir", params=params, schedule="heuristic")
    assert unordered_releases(res.ptx) == [], name
    if "ld.shared" in res.ptx and name in ROWS:
        assert FENCE in res.ptx


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", ["softmax", "rmsnorm_residual"])
def test_sixteen_row_programs_are_exact_at_4096_by_32768(name):
    """Where the race showed most (wrong rows in every launch): four launches, outputs
    poisoned with NaN before each, every element within 5% of float32 torch (relative,
    above a thousandth of its row's largest)."""
    import torch

    import tawac.torch

    m, n = 4096, 32768
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(m, n, device="cuda", generator=g) * 2 + 0.5).to(torch.bfloat16)
    r = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16)
    w = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    k = tawac.torch.kernel(EXAMPLES / f"{name}.mlir", params={"BLOCK_M": 16, "BLOCK_N": 128})
    if name == "softmax":
        want = {"y": torch.softmax(x.float(), -1)}
        outs = {"y": torch.empty_like(x)}
        args = (x, outs["y"])
    else:
        h = (x.float() + r.float()).to(torch.bfloat16).float()
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
        want = {"y": y, "h": h}
        outs = {"y": torch.empty_like(x), "h": torch.empty_like(x)}
        names = [a["name"] for a in k.args if a.get("access") == "write"]
        assert sorted(names) == ["h", "y"], names
        order = [a["name"] for a in k.args]
        given = {"x": x, "r": r, "w": w, **outs}
        args = tuple(given[a] for a in order if a in given) + (1e-5,)
    for launch in range(4):
        for t in outs.values():
            t.fill_(float("nan"))
        k(*args)
        torch.cuda.synchronize()
        for key, t in outs.items():
            ref = want[key]
            floor = 1e-3 * ref.abs().amax(-1, keepdim=True)  # the row's scale
            err = ((t.float() - ref).abs() / (ref.abs() + floor)).amax(-1)
            bad = ((err > 0.05) | t.float().isnan().any(-1)).nonzero().flatten().tolist()
            assert bad == [], f"{name} launch {launch}: {key} wrong in rows {bad[:8]}"
