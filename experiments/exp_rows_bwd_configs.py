"""Which block shapes suit the norm backward passes (`examples/rmsnorm_bwd.mlir`,
`examples/layernorm_bwd.mlir`, then `examples/column_sum.mlir` per weight gradient)?
`benchmarks/bench_rows.py` runs them at 64 x 128 blocks (the examples' defaults, no
tuning table), which at 1-128 tokens is one program of 64 rows, 63 of them padding, over
32-64 column blocks. Each configuration is checked against float32 torch first (dx, dw,
db norm-wise within 1e-2), then timed round-robin with the 64 x 128 form, eager torch
and a copy of x's bytes.

    python3 experiments/exp_rows_bwd_configs.py [--kernels rmsnorm_bwd,layernorm_bwd]
        [--shapes 1x4096,4096x4096] [--configs m1n4096a,m16n512a_c64n64]
        [--compile-only]

A configuration `m8n1024ao2_c64n64`: the row kernel at BLOCK_M 8, BLOCK_N 1024, `a`: its
first loop's running sums marked `fastmath<reassoc>` (so `sink-reductions` takes them out
of the loop, as the forward examples spell them), `o2`: 2 CTAs a SM; after `_c`, the
column sum's BLOCK_M and BLOCK_N (without: its tuning table); a final `P`: layer norm's
two column sums as one `examples/column_sum_pair.mlir` launch (its tuning table)."""

import argparse
import re
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "experiments"))
import bench_rows as b  # noqa: E402
from checks import drop_wrong  # noqa: E402
from exp_rows_occupancy import print_medians  # noqa: E402

import tawac.torch  # noqa: E402

E = ROOT / "examples"
SHAPES = [f"{t}x{h}" for t in (1, 16, 128, 4096, 32768) for h in (4096, 8192)]
CONFIGS = ["m64n128", "m1n4096a", "m1n2048a", "m4n1024a", "m8n1024a", "m16n512a", "m16n1024a"]
ORDERED = {
    "rmsnorm_bwd": ["%a_new = arith.addf %a, %r : tensor<$BLOCK_Mxf32>"],
    "layernorm_bwd": [
        "%n1 = arith.addf %a1, %r1 : tensor<$BLOCK_Mxf32>",
        "%n2 = arith.addf %a2, %r2 : tensor<$BLOCK_Mxf32>",
    ],
}


def source(kernel: str, marked: bool) -> tuple[Path, str]:
    """The example, or with `marked` a copy of it (in a temporary folder) whose first
    loop's running sums say `fastmath<reassoc>`."""
    path = E / f"{kernel}.mlir"
    text = path.read_text()
    if not marked:
        return path, text
    for line in ORDERED[kernel]:
        assert line in text, line
        text = text.replace(line, line.replace(" : tensor", " fastmath<reassoc> : tensor"))
    path = Path(tempfile.gettempdir()) / "exp_rows_bwd" / f"{kernel}_reassoc.mlir"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path, text


def parse(c: str) -> tuple[dict, dict, bool, dict]:
    """(row params, row options, marked, column-sum params) of a configuration name."""
    found = re.fullmatch(r"m(\d+)n(\d+)(a)?(?:o(\d+))?(?:_c(\d+)n(\d+))?(P)?", c)
    bm, bn = int(found.group(1)), int(found.group(2))
    options = {"ctas_per_sm": int(found.group(4))} if found.group(4) else {}
    col = {"BLOCK_M": int(found.group(5) or 64), "BLOCK_N": int(found.group(6) or 128)}
    if found.group(7):
        col = None  # column_sum_pair.mlir with its tuning table
    elif not found.group(5):
        col = {}  # column_sum.mlir with its tuning table
    return {"BLOCK_M": bm, "BLOCK_N": bn}, options, bool(found.group(3)), col


def kernels_of(kernel: str, c: str):
    params, options, marked, col = parse(c)
    src, _ = source(kernel, marked)
    rows = tawac.torch.kernel(src, params=params, tuning=None, **options)
    if col is None:
        return params["BLOCK_M"], rows, tawac.torch.kernel(E / "column_sum_pair.mlir")
    colsum = tawac.torch.kernel(E / "column_sum.mlir", params=col, tuning=None if col else "auto")
    return params["BLOCK_M"], rows, colsum


def compile_only(kernels: list[str], configs: list[str]) -> None:
    from tawac.driver import compile_cached

    for kernel in kernels:
        for c in configs:
            params, options, marked, col = parse(c)
            src, text = source(kernel, marked)
            try:
                compile_cached(src, params=params, text=text, **options)
                if col is not None:
                    compile_cached(E / "column_sum.mlir", params=col or None)
                print(f"compiled {kernel} {c}", flush=True)
            except Exception as e:  # noqa: BLE001 - an experiment reports and goes on
                print(f"# {kernel} {c}: {type(e).__name__}: {str(e)[:300]}", flush=True)


def shape_rows(kernel: str, shape: str, configs: list[str]) -> None:
    m, n = (int(v) for v in shape.split("x"))
    layer = kernel == "layernorm_bwd"
    x, dy, w, mean, rstd, refs = b.backward_problem(kernel, m, n)
    stats = (mean, rstd) if layer else (rstd,)
    dx = torch.empty_like(x)
    grads = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in refs[1:]]
    systems = {}
    for c in configs:
        try:
            bm, rows, colsum = kernels_of(kernel, c)
        except Exception as e:  # noqa: BLE001
            print(f"# {kernel} {c}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        parts = [torch.empty(-(-m // bm), n, device="cuda") for _ in refs[1:]]

        pair = c.endswith("P")

        def ours(rows=rows, colsum=colsum, parts=parts, pair=pair):
            rows(x, dy, w, *stats, dx, *parts)
            if pair:
                colsum(*parts, *grads)
                return
            for part, grad in zip(parts, grads, strict=True):
                colsum(part, grad)

        systems[c] = ours
    time_backward(kernel, shape, systems, (x, dy, w, mean, rstd), [dx, *grads], refs, configs[0])


def time_backward(kernel, shape, systems, inputs, outs, refs, base_key) -> None:
    """`systems` beside eager torch's backward of `inputs` (x, dy, w, mean, rstd) and a
    copy of x's bytes: each checked against `refs` (float32 autograd) into `outs` (dx,
    then the weight gradients), then timed round-robin, one line of medians over
    `base_key`'s (also `exp_norm_bwd_rows.py`'s)."""
    math = b._backward_math(kernel)

    def eager():
        for o, v in zip(outs, math(*inputs), strict=True):
            o.copy_(v)

    systems["eager"] = eager
    drop_wrong(systems, outs, refs, shape)
    src = torch.empty_like(inputs[0])
    systems["copy"] = lambda: outs[0].copy_(src)
    print_medians(kernel, shape, systems, base_key)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--kernels", default="rmsnorm_bwd,layernorm_bwd")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--compile-only", action="store_true")
    a = p.parse_args()
    if a.compile_only:
        compile_only(a.kernels.split(","), a.configs.split(","))
        return
    print(torch.cuda.get_device_name(), flush=True)
    for kernel in a.kernels.split(","):
        for shape in a.shapes.split(","):
            shape_rows(kernel, shape, a.configs.split(","))


if __name__ == "__main__":
    main()
