"""Which change to a consumer's release of a ring slot it read with `ld.shared` ends the
16-row softmax's wrong rows: the PTX edited after printing (the compiler's own fence
removed first), launched through `tawac.torch`, eight launches each with the output
poisoned, every element against float32 torch (a row is wrong where an element is off by
more than 5%), and the rows of its program the wrong rows were.

    python3 experiments/exp_slot_release.py base allarrive fence wgbar syncwait

Variants: `base` (as generated before the fix: `bar.warp.sync`, lane 0 of each warp
arrives), `allarrive` (every thread arrives, the empty barrier counting 128),
`fence` (`fence.proxy.async.shared::cta` before `bar.warp.sync`: the fix), `wgbar`
(`bar.sync 1, 128` instead of `bar.warp.sync`), `syncwait` (`bar.warp.sync` also after
the full barrier's wait). The edits assume one consumer warp group.

It ran on an NVIDIA H100 on 2026-12-06 (docs/perf/2026-12-06.md, "The slot release
race"; raw log docs/perf/data/slot-release-race-h100-2026-12-06.log)."""

import os
import re
import sys
from pathlib import Path

os.environ["TAWAC_CACHE"] = "0"
import torch

import tawac.compiler as tc
import tawac.torch

ORIGINAL = tc.print_module
VARIANT = {"name": "base"}
FENCED = "fence.proxy.async.shared::cta;\n\tbar.warp.sync -1;"
WAITED = r"(@!%p\d+ bra \$L_wait_\d+;)"


def edit(text: str) -> str:
    """The consumer's part of the PTX (from its `setmaxnreg.inc`) with the variant's
    release; the compiler's fence removed first."""
    text = text.replace(FENCED, "bar.warp.sync -1;")
    v = VARIANT["name"]
    if v == "base":
        return text
    i = text.index("setmaxnreg.inc")
    head, cons = text[:i], text[i:]
    if v == "allarrive":
        head = re.sub(r"(mbarrier\.init\.shared::cta\.b64 \[%r\d+\]), 4;", r"\1, 128;", head)
        cons = re.sub(r"@%p\d+ (mbarrier\.arrive\.shared::cta\.b64 _,)", r"\1", cons)
    elif v == "fence":
        cons = cons.replace("bar.warp.sync -1;", FENCED)
    elif v == "wgbar":
        cons = cons.replace("bar.warp.sync -1;", "bar.sync 1, 128;")
    elif v == "syncwait":
        cons = re.sub(WAITED, r"\1\n\tbar.warp.sync -1;", cons)
    else:
        raise SystemExit(f"unknown variant {v}")
    return head + cons


tc.print_module = lambda module: edit(ORIGINAL(module))
E = Path(__file__).resolve().parents[1] / "examples"
CASES = [
    ("softmax", 4096, 32768, 16, 16),
    ("softmax", 4096, 32768, 16, 32),
    ("softmax", 4096, 32768, 32, 16),
    ("rmsnorm", 4096, 32768, 16, 32),
    ("softmax", 4096, 32768, 64, 8),
    ("rmsnorm", 4096, 32768, 64, 8),
]


def reference(kernel: str, x, w):
    xf = x.float()
    if kernel == "softmax":
        return torch.softmax(xf, -1)
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()


def run(kernel: str, m: int, n: int, bm: int, stages: int, data: dict) -> str:
    if (kernel, m, n) not in data:
        x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(torch.bfloat16)
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        data[(kernel, m, n)] = (x, w, reference(kernel, x, w))
    x, w, ref = data[(kernel, m, n)]
    params = {"BLOCK_N": 128, "BLOCK_M": bm}
    k = tawac.torch.kernel(E / f"{kernel}.mlir", params=params, stages=stages)
    y = torch.empty_like(x)
    args = (x, y) if kernel == "softmax" else (x, w, y, 1e-5)
    counts, rows_in_program = [], set()
    for _ in range(8):
        y.fill_(float("nan"))
        k(*args)
        torch.cuda.synchronize()
        err = ((y.float() - ref).abs() / (ref.abs() + 1e-3)).amax(-1)
        bad = ((err > 0.05) | y.float().isnan().any(-1)).nonzero().flatten().tolist()
        rows_in_program |= {r % bm for r in bad}
        counts.append(len(bad))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(15):
        start.record()
        k(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return (
        f"bad rows per launch {counts} rows-in-program {sorted(rows_in_program)[:12]} "
        f"median {times[7] * 1e3:.0f} us"
    )


def main() -> None:
    torch.manual_seed(0)
    data: dict = {}
    for variant in sys.argv[1:]:
        VARIANT["name"] = variant
        for kernel, m, n, bm, stages in CASES:
            label = f"{variant:9s} {kernel} {m}x{n} m{bm} s{stages}"
            try:
                print(f"{label}: {run(kernel, m, n, bm, stages, data)}", flush=True)
            except Exception as e:  # noqa: BLE001 - an experiment reports and goes on
                print(f"{label}: ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    main()
