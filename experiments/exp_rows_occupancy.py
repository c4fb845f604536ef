"""Do row kernels (no MMA) run faster with several CTAs per SM (`ctas_per_sm`: each
CTA's shared memory and registers fit its share of the SM, a persistent launch runs k
CTAs a SM), with other block shapes, or spelled without reductions in their loops? Each
configuration through `tawac.torch`, checked element by element against
float32 torch first (off by more than 2% + 1e-3: wrong), then timed round-robin with the
shipped example (`table`), eager torch and a copy of the same bytes.

    python3 experiments/exp_rows_occupancy.py [--kernels softmax,rmsnorm,layernorm]
        [--configs m16n256s4o2,m16n256s0o4p0] [--shapes 1x4096,4096x4096]

A configuration `m16n256s4o2`: BLOCK_M 16, BLOCK_N 256, 4 slots (s0: the planner's
depth), 2 CTAs per SM; `p0`: not persistent; `r0`: without `reuse-slots` (each loop loads
its tiles); `a`: the source in `experiments/rows_acc/` (the loops keep tiles of partial
sums or maxima and reduce them after the loop, as Triton's tutorials spell them) instead
of the example; `k`: without `sink-reductions` (each block's reduction kept in the loop);
`table-r0`: the shipped table's configuration without `reuse-slots`.
`--compile-only` compiles every configuration into the compile cache and exits (no GPU:
fill the cache here, carry it to the GPU machine). To
compare two trees' compilers (`o1` configurations only before `ctas_per_sm`), run it once
per tree with `PYTHONPATH` pointing at the tree (`git archive REV tawac | tar -x -C /tmp/old`)."""

import argparse
import re
import sys
from pathlib import Path

import torch

import tawac.torch
from tawac.runtime.runner import round_robin_medians

ROOT = Path(__file__).resolve().parents[1]
E = ROOT / "examples"
ACC = ROOT / "experiments" / "rows_acc"
SHAPES = {
    "softmax": ["4096x1024", "4096x4096", "32768x4096", "4096x32768", "1024x131072"],
    "rmsnorm": ["128x4096", "4096x4096", "4096x8192", "32768x4096"],
    "layernorm": ["128x4096", "4096x4096", "32768x4096"],
}
CONFIGS = [
    "m64n256s0o1",
    "m64n256s0o2",
    "m32n256s0o1",
    "m32n256s0o2",
    "m32n256s0o3",
    "m16n256s0o1",
    "m16n256s0o2",
    "m16n256s0o4",
    "m16n256s4o4",
    "m16n256s0o4p0",
    "m16n128s0o4",
    "m8n256s0o4",
]
EPS = 1e-5


def reference(kernel, x, w, b):
    xf = x.float()
    if kernel == "softmax":
        return torch.softmax(xf, 1)
    if kernel == "rmsnorm":
        return xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + EPS) * w.float()
    mean = xf.mean(1, keepdim=True)
    var = ((xf - mean) ** 2).mean(1, keepdim=True)
    return (xf - mean) * torch.rsqrt(var + EPS) * w.float() + b.float()


def parse_config(kernel: str, c: str) -> tuple[Path, dict, dict]:
    """(source, params, options) of a configuration name such as `m8n1024s0o1a`."""
    found = re.fullmatch(r"m(\d+)n(\d+)s(\d+)o(\d+)(p0)?(r0)?(a)?(k)?", c)
    bm, bn, s, o = (int(v) for v in found.groups()[:4])
    options = {"stages": s, "persistent": found.group(5) is None}
    if o != 1:  # an older tree has no knob
        options["ctas_per_sm"] = o
    if found.group(6):
        options["reuse_slots"] = False
    if found.group(8):
        options["sink_reductions"] = False
    src = (ACC if found.group(7) else E) / f"{kernel}.mlir"
    return src, {"BLOCK_M": bm, "BLOCK_N": bn}, options


def compile_only(kernels: list[str], configs: list[str]) -> None:
    """Compiles each configuration into the compile cache (no GPU), as the timed run
    would: the keys are the same (source text, params, options)."""
    from tawac.driver import compile_cached

    for kernel in kernels:
        for c in configs:
            if c.startswith("table"):
                continue
            src, params, options = parse_config(kernel, c)
            try:
                compile_cached(src, params=params, text=src.read_text(), **options)
                print(f"compiled {kernel} {c}", flush=True)
            except Exception as e:  # noqa: BLE001 - an experiment reports and goes on
                print(f"# {kernel} {c}: {type(e).__name__}: {str(e)[:200]}", flush=True)


def shape_rows(kernel: str, shape: str, configs: list[str]) -> None:
    m, n = (int(v) for v in shape.split("x"))
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 2 + 0.5).to(torch.bfloat16)
    w = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    y = torch.empty_like(x)
    if kernel == "softmax":
        args = (x, y)
    elif kernel == "rmsnorm":
        args = (x, w, y, EPS)
    else:
        args = (x, w, b, y, torch.empty(m, device="cuda"), torch.empty(m, device="cuda"), EPS)
    ref = reference(kernel, x, w, b)
    systems = {}
    for c in ["table", *configs]:
        try:
            if c == "table":
                k = tawac.torch.kernel(E / f"{kernel}.mlir")
            elif c == "table-r0":
                k = tawac.torch.kernel(E / f"{kernel}.mlir", reuse_slots=False)
            else:
                src, params, options = parse_config(kernel, c)
                k = tawac.torch.kernel(src, params=params, tuning=None, **options)
            y.fill_(float("nan"))
            k(*args)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - an experiment reports and goes on
            print(f"# {kernel} {shape} {c}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        wrong = int(((y.float() - ref).abs() > 0.02 * ref.abs() + 1e-3).sum())
        if wrong or y.float().isnan().any():
            print(f"# {kernel} {shape} {c}: wrong, {wrong} elements", flush=True)
            continue
        systems[c] = lambda k=k: k(*args)
    eager = {
        "softmax": lambda: torch.softmax(x, 1),
        "rmsnorm": lambda: torch.nn.functional.rms_norm(x, (n,), w, EPS),
        "layernorm": lambda: torch.nn.functional.layer_norm(x, (n,), w, b, EPS),
    }[kernel]
    src = torch.empty_like(x)
    systems["eager"] = eager
    systems["copy"] = lambda: y.copy_(src)
    print_medians(kernel, shape, systems, "table")


def print_medians(kernel: str, shape: str, systems: dict, base_key: str) -> None:
    """Times `systems` round-robin (3 rounds) and prints one line of their medians (us),
    each over `base_key`'s as a speed-up (not the copy's and eager's)."""
    med = {k: v * 1e3 for k, v in round_robin_medians(systems, 3, rep_ms=60).items()}
    base = med.get(base_key)
    cells = " ".join(
        f"{k}={t:.1f}" + (f"({base / t:.2f}x)" if base and k not in ("copy", "eager") else "")
        for k, t in med.items()
    )
    print(f"{kernel} {shape}: {cells}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--kernels", default="softmax,rmsnorm,layernorm")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--shapes", default="", help="rows x columns for every kernel (default: SHAPES)")
    p.add_argument("--compile-only", action="store_true", help="fill the compile cache, no GPU")
    a = p.parse_args()
    if a.compile_only:
        compile_only(a.kernels.split(","), a.configs.split(","))
        return
    print(torch.cuda.get_device_name(), "tawac from", Path(tawac.__file__).parent, flush=True)
    for kernel in a.kernels.split(","):
        for shape in a.shapes.split(",") if a.shapes else SHAPES[kernel]:
            shape_rows(kernel, shape, a.configs.split(","))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
