"""Where does tawac's compile of Triton's vector add (tutorial 01, BLOCK_SIZE 1024, fp32)
lose its 4-10% to Triton's? Each pipeline configuration of `tawac.triton.compile`
(`ctas_per_sm`, ring depth, persistence, consumer warp groups) is checked
bit-exact against x + y first, then timed round-robin (medians) with Triton's compile of
the same source (num_warps 4 and 8), eager torch and a copy of x.

    python3 experiments/exp_vector_add_configs.py [--sizes 20,24,28] [--configs o2,s8,p0]
        [--rounds 3]

A configuration is `default` or options joined by `-`: `o<k>` k CTAs a SM, `s<n>` n ring
slots, `p0` not persistent, `w<k>` k consumer warp groups. One that fails to compile or is
wrong is reported and left out.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

import torch
import triton

import tawac.triton
from tawac.runtime.runner import round_robin_medians

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "examples" / "triton" / "vector_add.py"
CONFIGS = "default,o2,o3,s4,s8,s32,p0,p0-s2,w2,o2-w2,o2-s8"
KEYS = {"o": "ctas_per_sm", "s": "stages", "p": "persistent", "w": "consumer_warp_groups"}


def options(config: str) -> dict:
    if config == "default":
        return {}
    out = {}
    for part in config.split("-"):
        m = re.fullmatch(r"([ospw])(\d+)", part)
        if m is None:
            raise SystemExit(f"unknown configuration part {part!r} in {config!r}")
        key, value = KEYS[m.group(1)], int(m.group(2))
        out[key] = bool(value) if key == "persistent" else value
    return out


def _size(e: int, ours: dict, mod, rounds: int) -> None:
    """Check, time and print every configuration at 2^e elements."""
    n = 1 << e
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    systems = {}
    for c, k in ours.items():
        try:
            z.fill_(float("nan"))
            k[grid](x, y, z, n)
            torch.cuda.synchronize()
        except Exception as err:  # noqa: BLE001 (report and go on)
            print(f"2^{e} {c}: failed: {str(err).splitlines()[0][:160]}")
            continue
        if not torch.equal(z, x + y):
            print(f"2^{e} {c}: WRONG")
            continue
        systems[f"tawac {c}"] = lambda k=k: k[grid](x, y, z, n)
    for w in (4, 8):
        systems[f"triton w{w}"] = lambda w=w: mod.add_kernel[grid](
            x, y, z, n, BLOCK_SIZE=1024, num_warps=w
        )
    systems["eager"] = lambda: torch.add(x, y, out=z)
    systems["copy"] = lambda: z.copy_(x)
    med = {k: v * 1e3 for k, v in round_robin_medians(systems, rounds).items()}
    tri = min(med["triton w4"], med["triton w8"])
    print(f"2^{e}: triton {tri:.1f}  eager {med['eager']:.1f}  copy {med['copy']:.1f}")
    for k, v in sorted(med.items(), key=lambda kv: kv[1]):
        if k.startswith("tawac"):
            print(f"   {k:22s} {v:8.1f}  {tri / v:.3f}x triton")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,22,24,26,28", help="log2 of the elements")
    ap.add_argument("--configs", default=CONFIGS)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("tutorial_vector_add", TUTORIAL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sig = {k: ("*fp32" if v.startswith("*") else v) for k, v in mod.TTIR["signature"].items()}
    ours = {}
    for c in args.configs.split(","):
        ours[c] = tawac.triton.compile(
            mod.TTIR["kernel"],
            signature=sig,
            constexprs={"BLOCK_SIZE": 1024},
            tuning=None,
            **options(c),
        )
    print(f"# {torch.cuda.get_device_name()}; us, medians of {args.rounds} round-robin rounds")
    for e in (int(s) for s in args.sizes.split(",")):
        _size(e, ours, mod, args.rounds)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
