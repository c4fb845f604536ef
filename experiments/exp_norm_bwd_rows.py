"""Would a norm backward that reads each row once, a persistent program per CTA adding
its rows' weight gradients in registers, move its bytes nearer a copy's rate?

The examples (`examples/rmsnorm_bwd.mlir`, `layernorm_bwd.mlir`) run at 0.55-0.78 of a
copy at 64 MB and more (docs/perf/2026-12-07.md): two loops over a row block's column
blocks read x and dy twice where the block does not stay in the ring, and the partial
weight sums are one f32 row per program (cdiv(M, BLOCK_M) x N), written and read back
by the column sum. The variants (`examples/rmsnorm_bwd_rows.mlir`,
`layernorm_bwd_rows.mlir`, and `experiments/*_bwd_rows_wreg.mlir`: the same with w held in
registers across the loop) hold a whole row in one BLOCK_N block (so N <= BLOCK_N), loop
over rows `pid, pid + P, ...` with P the partial sums' rows (the grid: P programs) and
carry dw (and db) across the loop: one read of x and dy, P x N partial sums.

Each configuration is checked against float32 torch (dx, dw, db) first, then timed
round-robin with eager torch and a copy of x's bytes (medians of 3 rounds, us).

    python3 experiments/exp_norm_bwd_rows.py [--kernels rmsnorm_bwd,layernorm_bwd]
        [--shapes 4096x4096,32768x8192] [--configs m8n1024,r1,r2o2] [--compile-only]

A configuration `m8n1024`: the example at BLOCK_M 8, BLOCK_N 1024, then its column sums
(their tuning tables); `r2o2s4`: the row variant with P = 2 x the SM count programs
(`r1`: one per SM), BLOCK_N the row length's next power of 2, `w`: the example (w read
from its slot every row; without: `*_bwd_rows_wreg.mlir`, w held in registers), `o2`: 2
CTAs a SM, `s4`: ring depth 4; `t1`: the example at two rows a step (BLOCK_M 2: the
partials carried per row of the step, summed after the loop; the planner gives each row
a consumer warp group), `t1c1`: the same on one consumer warp group; `c2`
after an `r` configuration (`r1wc2`): each row over two consumer warp groups (the eight
warps side by side along it); a trailing `x` (`r1wx`, `t1x`): without the slot rereads
of `reread-slots`.
"""

import argparse
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "experiments"))
import bench_rows as b  # noqa: E402
from exp_rows_bwd_configs import time_backward  # noqa: E402

import tawac.torch  # noqa: E402

E = ROOT / "examples"
X = ROOT / "experiments"
SHAPES = [f"{t}x{h}" for t in (1, 16, 128, 4096, 32768) for h in (4096, 8192)]
CONFIGS = ["m1n4096", "m8n1024", "m16n512", "m32n256", "r1", "r2", "r1w", "r2w", "r1s4", "r1o2"]


def parse(c: str, kernel: str, n: int) -> tuple[Path, dict, dict, int | None]:
    """(source, params, options, programs per SM or None for the example) of `c`; a
    trailing `x` turns the slot rereads off (`reread_slots=False`)."""
    if c.endswith("x"):
        src, params, options, per_sm = parse(c[:-1], kernel, n)
        return src, params, {**options, "reread_slots": False}, per_sm
    found = re.fullmatch(r"m(\d+)n(\d+)", c)
    if found:
        params = {"BLOCK_M": int(found.group(1)), "BLOCK_N": int(found.group(2))}
        return E / f"{kernel}.mlir", params, {}, None
    found = re.fullmatch(r"t(\d+)(?:c(\d))?", c)
    if found:
        block = 1 << (n - 1).bit_length()
        params = {"BLOCK_M": 2, "BLOCK_N": block}
        options = {"consumer_warp_groups": int(found.group(2))} if found.group(2) else {}
        return E / f"{kernel}_rows.mlir", params, options, int(found.group(1))
    found = re.fullmatch(r"r(\d+)(w)?(?:o(\d+))?(?:s(\d+))?(?:c(\d))?", c)
    if found is None:
        raise SystemExit(f"bad configuration {c!r}")
    options = {}
    if found.group(5):
        options["consumer_warp_groups"] = int(found.group(5))
    if found.group(3):
        options["ctas_per_sm"] = int(found.group(3))
    if found.group(4):
        options["stages"] = int(found.group(4))
    block = 1 << (n - 1).bit_length()
    src = E / f"{kernel}_rows.mlir" if found.group(2) else X / f"{kernel}_rows_wreg.mlir"
    return src, {"BLOCK_M": 1, "BLOCK_N": block}, options, int(found.group(1))


def shape_rows(kernel: str, shape: str, configs: list[str]) -> None:
    m, n = (int(v) for v in shape.split("x"))
    layer = kernel == "layernorm_bwd"
    x, dy, w, mean, rstd, refs = b.backward_problem(kernel, m, n)
    stats = (mean, rstd) if layer else (rstd,)
    dx = torch.empty_like(x)
    grads = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in refs[1:]]
    colsum = tawac.torch.kernel(E / f"column_sum{'_pair' if layer else ''}.mlir")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    systems = {}
    for c in configs:
        src, params, options, per_sm = parse(c, kernel, n)
        try:
            rows = tawac.torch.kernel(src, params=params, tuning=None, **options)
        except Exception as e:  # noqa: BLE001 - an experiment reports and goes on
            print(f"# {kernel} {c}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        step = params["BLOCK_M"] if c.startswith("t") else 1  # rows a program's step
        p = -(-m // params["BLOCK_M"]) if per_sm is None else min(-(-m // step), per_sm * sms)
        parts = [torch.empty(p, n, device="cuda") for _ in refs[1:]]

        def ours(rows=rows, parts=parts):
            rows(x, dy, w, *stats, dx, *parts)
            colsum(*parts, *grads)

        systems[c] = ours
    time_backward(kernel, shape, systems, (x, dy, w, mean, rstd), [dx, *grads], refs, configs[0])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--kernels", default="rmsnorm_bwd,layernorm_bwd")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--compile-only", action="store_true")
    a = p.parse_args()
    if a.compile_only:
        from tawac.driver import compile_cached

        for kernel in a.kernels.split(","):
            for c in a.configs.split(","):
                for n in sorted({int(s.split("x")[1]) for s in a.shapes.split(",")}):
                    src, params, options, _ = parse(c, kernel, n)
                    try:
                        compile_cached(src, params=params, **options)
                        print(f"compiled {kernel} {c} n{n}", flush=True)
                    except Exception as e:  # noqa: BLE001
                        print(f"# {kernel} {c} n{n}: {type(e).__name__}: {str(e)[:200]}")
        return
    print(torch.cuda.get_device_name(), flush=True)
    for kernel in a.kernels.split(","):
        for shape in a.shapes.split(","):
            shape_rows(kernel, shape, a.configs.split(","))


if __name__ == "__main__":
    main()
