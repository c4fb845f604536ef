"""Kernels without MMAs: `examples/softmax.mlir`, `rmsnorm.mlir` and `layernorm.mlir`
(forward), `rmsnorm_bwd.mlir` and `layernorm_bwd.mlir` with `column_sum.mlir` and
`column_sum_pair.mlir` (backward: dx and the weight gradients from the forward's saved
statistics; to 8192 columns also the one-read `rmsnorm_bwd_rows.mlir` and
`layernorm_bwd_rows.mlir`, `rows` in the table, and to 256 tokens their one-launch
`_fused.mlir` forms, `fused`), and Triton's tutorial kernels compiled
by tawac (`tawac.triton.compile` of `examples/triton/vector_add.py` and
`fused_softmax.py`: the `tawac (Triton source)` column), against (a) a device-to-device
`copy_` (the machine's roof: rates compared, the kernel's bytes read and written once
each over its time against the copy's), (b) Triton's compile of the tutorial kernel of
the same computation where `examples/triton/` has one (`vector_add.py`,
`fused_softmax.py`, `layer_norm.py`: forward, and backward where it has it), its best of
a few `num_warps`, (c) `torch.compile` of the torch expression and (d) eager torch; same
run, round-robin, medians. Each system's result is checked against a float32 torch
reference first (a wrong one is dropped, saying so).

    python3 benchmarks/bench_rows.py
        [--kernels softmax,rmsnorm,layernorm,rmsnorm_bwd,layernorm_bwd,vector_add]
        [--shapes 4096x1024,4096x4096] [--configs table,n128,n256w1p0] [--rounds 3]
        [--off l2_hints,hold_slots]
        [--no-record]

A configuration is `table` (the default: the example as `tawac.torch.kernel` takes it,
with its tuning table, `examples/<kernel>.tune.json`) or `n<BLOCK_N>`, then optionally
`m<BLOCK_M>` (rows per program: 64 by default; the planner gives a 128- or 192-row
program two or three consumer warp groups, a 2- or 3-row one a warp group a row),
`s<stages>` (the ring's depth), `w<widen>`, `c<warp groups>` (the consumer warp groups,
else the planner's) and `p0` (not persistent): tawac's options for the tile examples;
each is timed and the best reported. `--off KNOB,...` times each of tawac's
tile-program configurations again with each of those pipeline knobs off (`<config>
off:<knob>`, in the medians line; the table reports the builds with the defaults):
an A/B of a compiler decision in one run (`--l2-ab` is `--off l2_hints`). Prints one table per
kernel: per shape the time of each system (us; tawac's best configuration named), the
bytes moved over tawac's time (GB/s), tawac's rate over the copy's (`of copy`) and
tawac's speed over the fastest of Triton and torch.compile (`vs best`, > 1 is faster).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import itertools
import sys
from pathlib import Path

from checks import drop_wrong

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "examples"
EPS = 1e-5
# The norm backward's row kernel has no tuning table: its partial weight sums have one row
# per program, so BLOCK_M sets the shape of an output (cdiv(M, BLOCK_M) x N) and the
# caller allocates it. The benchmark times these block shapes (BLOCK_M, BLOCK_N) and
# reports the fastest, as it reports Triton's best of its warp counts; the column sums
# take column_sum's table.
BACKWARD_BLOCKS = ((1, 4096), (2, 2048), (8, 1024), (16, 512), (32, 256))
#: The longest row the one-read backward (`examples/<kernel>_rows.mlir`: a whole row in
#: one block, a program per SM) is timed at: its row lives in registers.
ROWS_MAX_N = 8192
#: The rows a step the one-read backward is timed at (2: a row on each of two consumer
#: warp groups; the fastest is reported).
ROWS_BLOCK_M = (1, 2)
#: The one-launch backward (`examples/<kernel>_fused.mlir`): its programs (the most its
#: last program's sum reads: the examples' MAX_P), timed to this many tokens.
FUSED_MAX_P = 16
FUSED_MAX_ROWS = 256

#: The shape table: softmax (rows, columns), norms (tokens, hidden), vector add (1 x
#: elements, float32 as the tutorial).
SHAPES = {
    "vector_add": [f"1x{1 << e}" for e in (20, 22, 24, 26, 28)],
    "softmax": ["4096x1024", "4096x4096", "32768x4096", "4096x32768", "1024x131072", "16x131072"],
    "rmsnorm": [f"{t}x{h}" for t in (1, 16, 128, 4096, 32768) for h in (4096, 8192)],
    "layernorm": [f"{t}x{h}" for t in (1, 16, 128, 4096, 32768) for h in (4096, 8192)],
    "rmsnorm_bwd": [f"{t}x{h}" for t in (1, 16, 128, 4096, 32768) for h in (4096, 8192)],
    "layernorm_bwd": [f"{t}x{h}" for t in (1, 16, 128, 4096, 32768) for h in (4096, 8192)],
}


def _shape(text: str) -> tuple[int, int]:
    m, n = text.lower().split("x")
    return int(m), int(n)


def _config(text: str) -> tuple[dict, dict]:
    """(params, options) of a configuration `table` (none: what `tawac.torch.kernel` of the
    example takes by itself, its tuning table's entry for the call's sizes where it has
    one), `n128`, `n256w1`, `n128w1p0`, `n128m128`, `n2048m2c1` or `n128m16s16`."""
    import re

    if text == "table":
        return {}, {}
    m = re.fullmatch(r"n(\d+)(?:m(\d+))?(?:s(\d+))?(?:w(\d))?(?:c(\d))?(p0)?", text)
    if m is None:
        raise SystemExit(f"bad configuration {text!r} (expected e.g. n128, n128m16s8, n256w1p0)")
    params = {"BLOCK_N": int(m.group(1))}
    if m.group(2):
        params["BLOCK_M"] = int(m.group(2))
    options: dict = {}
    if m.group(3):
        options["stages"] = int(m.group(3))
    if m.group(4):
        options["widen"] = int(m.group(4))
    if m.group(5):
        options["consumer_warp_groups"] = int(m.group(5))
    if m.group(6):
        options["persistent"] = False
    return params, options


def _reference(kernel: str, x, w, b):
    import torch

    xf = x.float()
    if kernel == "softmax":
        return torch.softmax(xf, dim=1)
    if kernel == "rmsnorm":
        return xf * torch.rsqrt((xf * xf).mean(dim=1, keepdim=True) + EPS) * w.float()
    mean = xf.mean(dim=1, keepdim=True)
    var = ((xf - mean) ** 2).mean(dim=1, keepdim=True)
    return (xf - mean) * torch.rsqrt(var + EPS) * w.float() + b.float()


def _torch_fn(kernel: str):
    """The torch expression eager and torch.compile time (bf16 in and out)."""
    import torch
    import torch.nn.functional as F

    if kernel == "softmax":
        return lambda x, w, b: torch.softmax(x, dim=1)
    if kernel == "rmsnorm":
        return lambda x, w, b: F.rms_norm(x, (x.shape[1],), w, EPS)
    return lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, EPS)


def _triton_module(name: str):
    path = EXAMPLES / "triton" / f"{name}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"tutorial_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _triton_systems(kernel: str, x, w, b, y) -> dict:
    """Triton's compile of the tutorial kernel, one entry per num_warps tried (the best is
    reported), where the tutorial has this computation."""
    import torch
    import triton

    m, n = x.shape
    block = triton.next_power_of_2(n)
    out: dict = {}
    if kernel == "softmax":
        mod = _triton_module("fused_softmax")
        fn = getattr(mod, "softmax_kernel", None) if mod else None
        if fn is None or block > 65536:
            return out
        grid = (min(m, _sms() * 4),)
        for warps in (4, 8, 16):
            out[f"triton w{warps}"] = lambda warps=warps: fn[grid](
                y, x, x.stride(0), y.stride(0), m, n, BLOCK_SIZE=block, num_stages=2,
                num_warps=warps,
            )  # fmt: skip
    elif kernel == "layernorm":
        mod = _triton_module("layer_norm")
        fn = getattr(mod, "_layer_norm_fwd_fused", None) if mod else None
        if fn is None:
            return out
        mean = torch.empty(m, device=x.device)
        rstd = torch.empty(m, device=x.device)
        bs = min(65536 // x.element_size(), block)
        for warps in (4, 8, 16):
            out[f"triton w{warps}"] = lambda warps=warps: fn[(m,)](
                x, y, w, b, mean, rstd, x.stride(0), n, EPS, BLOCK_SIZE=bs, num_warps=warps
            )
    return out


def _cell(med: dict, key: str) -> str:
    return f"{med[key]:.1f}" if key in med else "-"


def _compiled(fn):
    """`torch.compile` of `fn` for one shape, from a fresh state: a run of many shapes would
    otherwise reach dynamo's recompile limit on the one function and time eager code as
    torch.compile's."""
    import torch

    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def _sms() -> int:
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count


def _tawac_triton(name: str, config: dict, dtype: str):
    """`tawac.triton.compile` of a tutorial kernel (its `TTIR` configuration, pointers of
    `dtype`)."""
    import tawac.triton

    mod = _triton_module(name)
    cfg = mod.TTIR
    sig = {k: (f"*{dtype}" if v.startswith("*") else v) for k, v in cfg["signature"].items()}
    return tawac.triton.compile(cfg["kernel"], signature=sig, constexprs=config)


def _run_vector_add(shape: str, rounds: int) -> str | None:
    """z = x + y of float32 vectors: tawac's compile of the tutorial, Triton's, torch."""
    import torch
    import triton

    from tawac.runtime.runner import round_robin_medians

    _, n = _shape(shape)
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    add = _triton_module("vector_add").add_kernel
    ours = _tawac_triton("vector_add", {"BLOCK_SIZE": 1024}, "fp32")
    grid = (triton.cdiv(n, 1024),)
    compiled = _compiled(lambda a, b: a + b)
    systems = {
        "tawac (triton)": lambda: ours[grid](x, y, z, n),
        "triton w4": lambda: add[grid](x, y, z, n, BLOCK_SIZE=1024, num_warps=4),
        "triton w8": lambda: add[grid](x, y, z, n, BLOCK_SIZE=1024, num_warps=8),
        "torch.compile": lambda: z.copy_(compiled(x, y)),
        "eager": lambda: torch.add(x, y, out=z),
    }
    drop_wrong(systems, [z], [x + y], shape, exact=True)
    systems["copy"] = lambda: z.copy_(x)
    if "tawac (triton)" not in systems:
        return None
    med = {k: v * 1e3 for k, v in round_robin_medians(systems, rounds).items()}
    t = med["tawac (triton)"]
    tri = min((v for k, v in med.items() if k.startswith("triton")), default=None)
    best = min(v for v in (tri, med.get("torch.compile")) if v is not None)
    moved, copied = 3 * 4 * n, 2 * 4 * n  # bytes: x, y read and z written; the copy's
    rate = moved / t / 1e3
    return (
        f"| {shape} | - | {t:.1f} | {f'{tri:.1f}' if tri else '-'} | "
        f"{_cell(med, 'torch.compile')} | {_cell(med, 'eager')} | {med['copy']:.1f} | {rate:.0f} | "
        f"{rate / (copied / med['copy'] / 1e3):.2f} | {best / t:.2f}x |\n#   "
        + " ".join(f"{k}={v:.1f}" for k, v in sorted(med.items()))
    )


def _run(kernel: str, shape: str, configs: list[str], rounds: int, off: list[str]) -> str | None:
    import torch

    import tawac.torch
    from tawac.runtime.runner import round_robin_medians

    m, n = _shape(shape)
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 2 + 0.5).to(torch.bfloat16)
    w = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    y = torch.empty_like(x)
    ours = {}
    for c in configs:
        params, options = _config(c)
        ours[c] = tawac.torch.kernel(EXAMPLES / f"{kernel}.mlir", params=params, **options)
        for knob in off:
            ours[f"{c} off:{knob}"] = tawac.torch.kernel(
                EXAMPLES / f"{kernel}.mlir", params=params, **{**options, knob: False}
            )
    args = {"softmax": (x, y), "rmsnorm": (x, w, y, EPS)}.get(kernel)
    if args is None:
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        args = (x, w, b, y, mean, rstd, EPS)
    eager = _torch_fn(kernel)
    compiled = _compiled(eager)
    src = torch.empty_like(x)
    if kernel == "softmax" and n <= 1024:
        import triton

        block = triton.next_power_of_2(n)
        tut = _tawac_triton("fused_softmax", {"BLOCK_SIZE": block, "num_stages": 4}, "bf16")
        ours_grid = (min(m, _sms() * 4),)
        tutorial = {"tawac (triton)": lambda: tut[ours_grid](y, x, x.stride(0), y.stride(0), m, n)}
    else:
        tutorial = {}
    systems = {
        **{f"tawac {c}": lambda k=k: k(*args) for c, k in ours.items()},
        **tutorial,
        **_triton_systems(kernel, x, w, b, y),
        "torch.compile": lambda: y.copy_(compiled(x, w, b)),
        "eager": lambda: y.copy_(eager(x, w, b)),
    }
    drop_wrong(systems, [y], [_reference(kernel, x, w, b)], shape)
    systems["copy"] = lambda: y.copy_(src)
    ours_left = [f"tawac {c}" for c in configs if f"tawac {c}" in systems]
    if not ours_left:
        return None
    med = {k: v * 1e3 for k, v in round_robin_medians(systems, rounds).items()}
    mine = min(ours_left, key=med.__getitem__)
    med["tawac"] = med[mine]
    moved = 2 * x.numel() * x.element_size()  # x read once, y written once
    tri = min((t for k, t in med.items() if k.startswith("triton")), default=None)
    best = min(t for t in (tri, med.get("torch.compile")) if t is not None)
    return (
        f"| {shape} | {med['tawac']:.1f} ({mine.removeprefix('tawac ')}) | "
        f"{_cell(med, 'tawac (triton)')} | {f'{tri:.1f}' if tri else '-'} | "
        f"{_cell(med, 'torch.compile')} | {_cell(med, 'eager')} | {med['copy']:.1f} | "
        f"{moved / med['tawac'] / 1e3:.0f} | {med['copy'] / med['tawac']:.2f} | "
        f"{best / med['tawac']:.2f}x |\n#   "
        + " ".join(f"{k}={t:.1f}" for k, t in sorted(med.items()) if k != "tawac")
    )


def _backward_math(kernel: str):
    """A norm's backward as torch computes it from the forward's saved statistics (what
    eager and torch.compile time): (dx, dw) for RMS norm, (dx, dw, db) for layer norm,
    float32 math on the bf16 inputs, dx in bf16."""
    import torch

    def rms(x, dy, w, mean, rstd):
        xf, dyf = x.float(), dy.float()
        r = rstd[:, None]
        xhat, wdy = xf * r, dyf * w.float()
        c = (xhat * wdy).mean(dim=1, keepdim=True)
        dx = (wdy - xhat * c) * r
        return dx.to(torch.bfloat16), (dyf * xhat).sum(dim=0)

    def layer(x, dy, w, mean, rstd):
        xf, dyf = x.float(), dy.float()
        r = rstd[:, None]
        xhat, wdy = (xf - mean[:, None]) * r, dyf * w.float()
        c1 = (xhat * wdy).mean(dim=1, keepdim=True)
        c2 = wdy.mean(dim=1, keepdim=True)
        dx = (wdy - (xhat * c1 + c2)) * r
        return dx.to(torch.bfloat16), (dyf * xhat).sum(dim=0), dyf.sum(dim=0)

    return rms if kernel == "rmsnorm_bwd" else layer


def backward_problem(kernel: str, m: int, n: int, device: str = "cuda"):
    """A norm backward's inputs at m x n and its float32 references: (x, dy, w, mean,
    rstd, [dx, dw] or [dx, dw, db]), autograd through torch's own norm on the bf16 inputs
    (seeded by m + n); the mean and rstd are the forward's saved statistics."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator(device=device).manual_seed(m + n)
    x = (torch.randn(m, n, device=device, generator=g) * 2 + 0.5).to(torch.bfloat16)
    w = torch.randn(n, device=device, generator=g).to(torch.bfloat16)
    b = torch.randn(n, device=device, generator=g).to(torch.bfloat16)
    dy = torch.randn(m, n, device=device, generator=g).to(torch.bfloat16)
    layer = kernel == "layernorm_bwd"
    xf, wf, bf = (t.float().requires_grad_() for t in (x, w, b))
    if layer:
        F.layer_norm(xf, (n,), wf, bf, EPS).backward(dy.float())
        refs = [xf.grad, wf.grad, bf.grad]
    else:
        F.rms_norm(xf, (n,), wf, EPS).backward(dy.float())
        refs = [xf.grad, wf.grad]
    xd = x.float()
    mean = xd.mean(dim=1)
    var = xd.var(dim=1, unbiased=False) if layer else (xd * xd).mean(dim=1)
    return x, dy, w, mean, torch.rsqrt(var + EPS), refs


def _run_backward(kernel: str, shape: str, rounds: int, off: list[str]) -> str | None:
    """A norm's backward: tawac's row kernel (`examples/<kernel>.mlir`: dx and per-program
    partial weight sums, the fastest of `BACKWARD_BLOCKS`; or, to `ROWS_MAX_N` columns,
    `examples/<kernel>_rows.mlir`: each row read once, a program per SM) then the
    partials' column sums
    (`examples/column_sum.mlir`; layer norm's two in one `column_sum_pair.mlir` launch), against
    torch.compile and eager of the same math (`_backward_math`) and Triton's tutorial
    backward where `examples/triton/layer_norm.py` has it (layer norm)."""
    import torch

    import tawac.torch
    from tawac.runtime.runner import round_robin_medians

    m, n = _shape(shape)
    layer = kernel == "layernorm_bwd"
    x, dy, w, mean, rstd, refs = backward_problem(kernel, m, n)
    dx = torch.empty_like(x)
    grads = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in refs[1:]]
    # the weight gradients' column sums: layer norm's two in one launch
    column_sum = tawac.torch.kernel(EXAMPLES / f"column_sum{'_pair' if layer else ''}.mlir")
    stats = (mean, rstd) if layer else (rstd,)
    ours = {}
    variants = [None, *off]  # the defaults, then each knob off
    for (bm, bn), knob in itertools.product(BACKWARD_BLOCKS, variants):
        rows = tawac.torch.kernel(
            EXAMPLES / f"{kernel}.mlir",
            params={"BLOCK_M": bm, "BLOCK_N": bn},
            **({knob: False} if knob else {}),
        )
        parts = [torch.empty(-(-m // bm), n, device="cuda") for _ in refs[1:]]

        def launch(rows=rows, parts=parts):
            rows(x, dy, w, *stats, dx, *parts)
            column_sum(*parts, *grads)

        ours[f"tawac m{bm}n{bn}{f' off:{knob}' if knob else ''}"] = launch

    if n <= ROWS_MAX_N:
        # the one-read form: a whole row a block, one program per SM carrying its partials
        block = 1 << (n - 1).bit_length()
        for bm, knob in itertools.product(ROWS_BLOCK_M, variants):
            rows = tawac.torch.kernel(
                EXAMPLES / f"{kernel}_rows.mlir",
                params={"BLOCK_M": bm, "BLOCK_N": block},
                **({knob: False} if knob else {}),
            )
            parts = [torch.empty(min(-(-m // bm), _sms()), n, device="cuda") for _ in refs[1:]]

            def launch(rows=rows, parts=parts):
                rows(x, dy, w, *stats, dx, *parts)
                column_sum(*parts, *grads)

            ours[f"tawac rows m{bm}{f' off:{knob}' if knob else ''}"] = launch

    if n <= ROWS_MAX_N and m <= FUSED_MAX_ROWS:
        # one launch: the last program to arrive adds the partials (`<kernel>_fused.mlir`)
        block = 1 << (n - 1).bit_length()
        ticket = torch.zeros(1, dtype=torch.int32, device="cuda")
        for bm, knob in itertools.product(ROWS_BLOCK_M, variants):
            fused = tawac.torch.kernel(
                EXAMPLES / f"{kernel}_fused.mlir",
                params={"BLOCK_M": bm, "BLOCK_N": block},
                **({knob: False} if knob else {}),
            )
            p = min(-(-m // bm), FUSED_MAX_P)
            rows = (p, 2, bm, n) if layer else (p, bm, n)  # a row of sums a row of the step
            part = torch.empty(rows, device="cuda")

            def launch(fused=fused, part=part):
                fused(x, dy, w, *stats, dx, *grads, part, ticket)

            ours[f"tawac fused m{bm}{f' off:{knob}' if knob else ''}"] = launch

    math = _backward_math(kernel)
    compiled = _compiled(math)

    def run(fn):
        got = fn(x, dy, w, mean, rstd)
        for o, v in zip([dx, *grads], got, strict=True):
            o.copy_(v)

    systems = {
        **ours,
        **_triton_backward(kernel, x, dy, w, mean, rstd, dx, grads),
        "torch.compile": lambda: run(compiled),
        "eager": lambda: run(math),
    }
    drop_wrong(systems, [dx, *grads], refs, shape)
    src = torch.empty_like(x)
    systems["copy"] = lambda: dx.copy_(src)
    if not any(k.startswith("tawac") for k in systems):
        return None
    med = {k: v * 1e3 for k, v in round_robin_medians(systems, rounds).items()}
    won = min((k for k in med if k.startswith("tawac") and " off:" not in k), key=med.get)
    med["tawac"] = med[won]
    moved = 3 * x.numel() * x.element_size()  # x and dy read once, dx written once
    tri = min((t for k, t in med.items() if k.startswith("triton")), default=None)
    best = min(t for t in (tri, med.get("torch.compile")) if t is not None)
    copied = 2 * x.numel() * x.element_size()
    return (
        f"| {shape} | {med['tawac']:.1f} ({won.split()[1]}) | - | {f'{tri:.1f}' if tri else '-'} | "
        f"{_cell(med, 'torch.compile')} | {_cell(med, 'eager')} | {med['copy']:.1f} | "
        f"{moved / med['tawac'] / 1e3:.0f} | "
        f"{moved / med['tawac'] / (copied / med['copy']):.2f} | {best / med['tawac']:.2f}x |\n#   "
        + " ".join(f"{k}={t:.1f}" for k, t in sorted(med.items()) if k != "tawac")
    )


def _triton_backward(kernel: str, x, dy, w, mean, rstd, dx, grads) -> dict:
    """Triton's compile of tutorial 05's backward (`_layer_norm_bwd_dx_fused` with its
    locks, then `_layer_norm_bwd_dwdb`), launched as the tutorial launches it, where
    `examples/triton/layer_norm.py` has both (layer norm only)."""
    import torch

    mod = _triton_module("layer_norm") if kernel == "layernorm_bwd" else None
    fused = getattr(mod, "_layer_norm_bwd_dx_fused", None)
    dwdb = getattr(mod, "_layer_norm_bwd_dwdb", None)
    if fused is None or dwdb is None:
        return {}
    import triton

    m, n = x.shape
    group = 256 if n <= 1024 else 128 if n <= 4096 else 96 if n <= 8192 else 64
    locks = torch.zeros(2 * group, dtype=torch.int32, device="cuda")
    dw_part = torch.zeros((group, n), dtype=x.dtype, device="cuda")
    db_part = torch.zeros((group, n), dtype=x.dtype, device="cuda")
    block = min(65536 // x.element_size(), triton.next_power_of_2(n))
    out: dict = {}
    for warps in (4, 8):

        def launch(warps=warps):
            locks.zero_()
            fused[(m,)](
                dx, dy, dw_part, db_part, x, w, mean, rstd, locks, x.stride(0), n,
                GROUP_SIZE_M=group, BLOCK_SIZE_N=block, num_warps=warps,
            )  # fmt: skip
            dwdb[(triton.cdiv(n, 128),)](
                dw_part, db_part, grads[0], grads[1], min(group, m), n,
                BLOCK_SIZE_M=32, BLOCK_SIZE_N=128,
            )  # fmt: skip

        out[f"triton w{warps}"] = launch
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--kernels", default="softmax,rmsnorm,layernorm,rmsnorm_bwd,layernorm_bwd,vector_add"
    )
    ap.add_argument("--shapes", default="", help="rows x columns, comma-separated")
    ap.add_argument("--configs", default="table", help="tawac configurations, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--off",
        default="",
        help="pipeline knobs, comma-separated: also time each tawac build with each off",
    )
    ap.add_argument("--l2-ab", action="store_true", help="the same as --off l2_hints")
    args = ap.parse_args()
    off = [k for k in args.off.split(",") if k] + (["l2_hints"] if args.l2_ab else [])
    import torch

    device = torch.cuda.get_device_name()
    configs = args.configs.split(",")
    print(f"# {datetime.date.today()} {device}, bf16, tawac configurations {args.configs}")
    for kernel in args.kernels.split(","):
        shapes = args.shapes.split(",") if args.shapes else SHAPES[kernel]
        what = "" if kernel == "vector_add" or kernel.endswith("_bwd") else " forward"
        print(f"\n{kernel}{what} (us; GB/s of tawac's reads and writes)\n")
        print(
            "| rows x columns | tawac | tawac (Triton source) | Triton | torch.compile | "
            "eager | copy | GB/s | of copy | vs best |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for shape in shapes:
            if kernel == "vector_add":
                row = _run_vector_add(shape, args.rounds)
            elif kernel.endswith("_bwd"):
                row = _run_backward(kernel, shape, args.rounds, off)
            else:
                row = _run(kernel, shape, configs, args.rounds, off)
            if row is not None:
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("rows", main))
