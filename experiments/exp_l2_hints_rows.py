"""Would L2 eviction hints let a row that does not fit on chip be read from DRAM once?

The softmax at 1024 x 131072 (a 256 KiB row: more than a CTA's shared memory) reads each
row twice, once per loop, and runs at 0.65x a copy's rate: about what two reads and one
write cost. Between a row's two reads the machine streams about 2 x 132 rows' bytes
through L2 (reads and writes), more than its 50 MB, so the second read misses. With the
first loop's loads marked `evict_last`, the second's `evict_first` and (variant `s`) the
stores `evict_first`, the rows in flight (132 x 256 KiB = 33 MB) might stay in L2.

Built without a compiler change: the kernel's PTX without hints (`l2_hints=False`)
edited as text (a `createpolicy` per partition, `.L2::cache_hint` on the producer's bulk
copies by loop, and on the consumer's `st.global`), assembled by ptxas and launched with
the kernel's own sidecar; since `a9dee44` the compiler writes the `last-first-s` hints
itself (`l2_hints`, on), timed beside them as `compiler`. Each variant checked against
float32 torch first, then timed round-robin (medians, us) with a copy of the same bytes.

    python3 experiments/exp_l2_hints_rows.py [--shapes 1024x131072,512x262144] [--rounds 5]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tawac.driver import compile_cached  # noqa: E402
from tawac.runtime.launcher import load_kernel  # noqa: E402
from tawac.runtime.runner import round_robin_medians  # noqa: E402
from tawac.support.ptxas import assemble  # noqa: E402

LOAD = re.compile(
    r"^(\s*(?:@!?%p\d+ )?cp\.async\.bulk\.(?:tensor\.\dd\.)?shared::cluster\.global\S*)( .*);$"
)
STORE = re.compile(r"^(\s*(?:@!?%p\d+ )?st\.global)(\.v\d\.b\d+|\.b\d+)( .*);$")
PRODUCER = "setmaxnreg.dec.sync.aligned.u32"
CONSUMER = "setmaxnreg.inc.sync.aligned.u32"


def hinted(ptx: str, first: str | None, later: str | None, stores: str | None) -> str:
    """`ptx` with the producer's bulk copies of its first inner loop under the policy
    `first`, those of its later loops under `later`, and the consumer's global stores
    under `stores` (L2 priorities: evict_last, evict_first, evict_normal; None: no
    hint)."""
    out, part, loop_ends = [], None, 0
    for line in ptx.splitlines():
        if line.strip().startswith(".reg .b64 %rd<"):
            out.append(line)
            out.append("\t.reg .b64 %pol<3>;")
            continue
        if PRODUCER in line:
            part, loop_ends = "producer", 0
            out.append(line)
            for i, p in enumerate((first, later)):
                if p:
                    out.append(f"\tcreatepolicy.fractional.L2::{p}.b64 %pol{i}, 1.0;")
            continue
        if CONSUMER in line:
            part = "consumer"
            out.append(line)
            if stores:
                out.append(f"\tcreatepolicy.fractional.L2::{stores}.b64 %pol2, 1.0;")
            continue
        if part == "producer" and line.startswith("$L_loop_end_"):
            loop_ends += 1
        m = LOAD.match(line)
        if part == "producer" and m:
            policy = first if loop_ends == 0 else later
            if policy:
                reg = "%pol0" if loop_ends == 0 else "%pol1"
                line = f"{m.group(1)}.L2::cache_hint{m.group(2)}, {reg};"
        m = STORE.match(line)
        if part == "consumer" and m and stores:
            line = f"{m.group(1)}.L2::cache_hint{m.group(2)}{m.group(3)}, %pol2;"
        out.append(line)
    return "\n".join(out) + "\n"


VARIANTS = {
    "base": (None, None, None),
    "last": ("evict_last", None, None),
    "last-first": ("evict_last", "evict_first", None),
    "last-first-s": ("evict_last", "evict_first", "evict_first"),
    "s": (None, None, "evict_first"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1024x131072,512x262144,2048x65536")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    src = ROOT / "examples" / "softmax.mlir"
    params = {"BLOCK_M": 1, "BLOCK_N": 8192}
    opts = {"ctas_per_sm": 1, "reuse_slots": True}
    res = compile_cached(src, params=params, cubin=False, l2_hints=False, **opts)
    kernels = {}
    for name, (first, later, stores) in VARIANTS.items():
        ptx = hinted(res.ptx, first, later, stores)
        hints = ptx.count(".L2::cache_hint")
        cubin, report = assemble(ptx, verbose=True)
        spill = re.search(r"(\d+) bytes spill stores", report)
        spilled = spill.group(1) if spill else "?"
        print(f"{name}: {hints} hinted instructions, spill stores {spilled}")
        kernels[name] = load_kernel(cubin, res.sidecar)
    # the compiler's own hints (`l2_hints`, on since a9dee44): the `last-first-s` PTX
    built = compile_cached(src, params=params, cubin=True, l2_hints=True, **opts)
    print(f"compiler: {built.ptx.count('.L2::cache_hint')} hinted instructions")
    kernels["compiler"] = load_kernel(built.cubin, built.sidecar)
    print(f"# {torch.cuda.get_device_name()}; us, medians of {args.rounds} round-robin rounds")
    for shape in args.shapes.split(","):
        m, n = (int(v) for v in shape.split("x"))
        g = torch.Generator(device="cuda").manual_seed(m + n)
        x = (torch.randn(m, n, device="cuda", generator=g) * 2).to(torch.bfloat16)
        y = torch.empty_like(x)
        ref = torch.softmax(x.float(), dim=1)
        systems = {}
        for name, k in kernels.items():
            y.fill_(float("nan"))
            k(x, y)
            err = (y.float() - ref).abs().max().item()
            if not err <= 1e-2:
                print(f"{shape} {name}: WRONG (max error {err})")
                continue
            systems[name] = lambda k=k, x=x, y=y: k(x, y)
        src_t = torch.empty_like(x)
        systems["copy"] = lambda y=y, s=src_t: y.copy_(s)
        med = {k: v * 1e3 for k, v in round_robin_medians(systems, args.rounds).items()}
        print(f"{shape}: copy {med['copy']:.1f}")
        for k, v in med.items():
            if k != "copy":
                rate, gain = med["copy"] / v, med["base"] / v
                print(f"   {k:14s} {v:8.1f}  {rate:.2f} of copy  {gain:.3f}x base")


if __name__ == "__main__":
    main()
