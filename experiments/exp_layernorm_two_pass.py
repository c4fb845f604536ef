"""The layer norm with its mean and squared deviations in one loop (Chan's merge of each
block's own: two reads of x, `experiments/layernorm_two_pass.mlir`) against the shipped
three-loop form (`examples/layernorm.mlir`: the mean, then the squared deviations, then
the output: three reads), same configurations, one process, round-robin, every element of
y, mean and rstd checked against float32 torch first.

    python3 experiments/exp_layernorm_two_pass.py [--shapes 1x4096,16x4096]
        [--configs m1n4096s0,m8n256s0]

Prepared on 2026-12-07 and not run yet: the session's device time was spent
(docs/perf/2026-12-07.md, "Owed to the GPU")."""

import argparse
import re
from pathlib import Path

import torch

import tawac.torch
from tawac.runtime.runner import round_robin_medians

HERE = Path(__file__).resolve().parent
THREE = HERE.parent / "examples" / "layernorm.mlir"
TWO = HERE / "layernorm_two_pass.mlir"
SHAPES = ["1x4096", "16x8192", "128x4096", "4096x4096", "4096x8192", "32768x4096", "32768x8192"]
CONFIGS = [(8, 256, 0), (16, 256, 0), (8, 256, 16), (8, 256, 32), (8, 1024, 0), (16, 512, 0)]
EPS = 1e-5


def one_shape(shape: str, configs: list[tuple[int, int, int]]) -> None:
    m, n = (int(v) for v in shape.split("x"))
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 2 + 0.5).to(torch.bfloat16)
    w = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
    xf = x.float()
    want_mean = xf.mean(1)
    want_rstd = torch.rsqrt(xf.var(1, unbiased=False) + EPS)
    want_y = (xf - want_mean[:, None]) * want_rstd[:, None] * w.float() + b.float()
    systems = {}
    for label, src in (("three", THREE), ("two", TWO)):
        for bm, bn, stages in configs:
            k = tawac.torch.kernel(
                src, params={"BLOCK_M": bm, "BLOCK_N": bn}, tuning=None, stages=stages
            )
            for t in (y, mean, rstd):
                t.fill_(float("nan"))
            k(x, w, b, y, mean, rstd, EPS)
            torch.cuda.synchronize()
            bad = int(((y.float() - want_y).abs() > 0.02 * want_y.abs() + 2e-2).sum())
            bad += int(((mean - want_mean).abs() > 1e-4 * want_mean.abs() + 1e-5).sum())
            bad += int(((rstd - want_rstd).abs() > 1e-4 * want_rstd.abs()).sum())
            name = f"{label} m{bm}n{bn}s{stages}"
            if bad:
                print(f"# {shape} {name}: {bad} wrong elements", flush=True)
                continue
            systems[name] = lambda k=k: k(x, w, b, y, mean, rstd, EPS)
    src = torch.empty_like(x)
    systems["copy"] = lambda: y.copy_(src)
    med = {k: v * 1e3 for k, v in round_robin_medians(systems, 3, rep_ms=60).items()}
    print(f"layernorm {shape}: " + " ".join(f"{k}={t:.1f}" for k, t in med.items()), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument(
        "--configs", default=",".join(f"m{m}n{n}s{s}" for m, n, s in CONFIGS), help="m8n256s0,..."
    )
    args = ap.parse_args()
    configs = []
    for c in args.configs.split(","):
        found = re.fullmatch(r"m(\d+)n(\d+)s(\d+)", c)
        if found is None:
            raise SystemExit(f"unknown configuration {c!r} (m<BLOCK_M>n<BLOCK_N>s<stages>)")
        configs.append(tuple(int(v) for v in found.groups()))
    print(torch.cuda.get_device_name(), flush=True)
    for shape in args.shapes.split(","):
        one_shape(shape, configs)


if __name__ == "__main__":
    main()
