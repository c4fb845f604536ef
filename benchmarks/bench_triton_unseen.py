"""Triton's compile against tawac's compile of Triton kernels written the way users write
them, not as the tutorials do (`tests/data/triton/unseen_attention.py`): the
FlashAttention forward (causal or not; every key block masked against the length) and
the grouped-query attention (`off_h // G`, which tawac groups with `group-heads`), bf16,
head dim 128, against SDPA; the flash kernel also with its masks on every key block
(`guard_masks=False`: the `guard-masks` pass off), the GQA kernel also with its keys
not split (`split_k=1`; tawac.triton splits them where the programs are few). Same
run, round-robin, medians; each output checked against a float32 torch reference first.

    python3 benchmarks/bench_triton_unseen.py [--rounds 5]
        [--shapes 4x32x4096,2x32x8192]     # flash: Z x H x N (H a multiple of 4)
        [--gqa 8x32x4x1x8192,...]          # gqa: B x H x HK x query rows x keys
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
D = 128


def _source():
    path = ROOT / "tests/data/triton/unseen_attention.py"
    spec = importlib.util.spec_from_file_location("unseen_attention", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference(q, k, v, causal: bool):
    import torch

    g = q.shape[1] // k.shape[1]
    k, v = k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    s = q.float() @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), -1e30)
    return torch.softmax(s, -1) @ v


def _launcher(fn, signature: dict, consts: dict, tawac: bool, num_warps: int, **options):
    """`launch(grid, *args)` of the Triton kernel `fn` compiled by Triton (its
    constexprs and warps at each launch) or by `tawac.triton.compile` (constexprs
    compiled in, pipeline `options`; the grid is Triton's, which tawac takes and does
    not use)."""
    if not tawac:
        return lambda grid, *args: fn[grid](*args, **consts, num_warps=num_warps)
    import tawac.triton

    compiled = tawac.triton.compile(fn, signature=signature, constexprs=consts, **options)
    return lambda grid, *args: compiled[grid](*args)


def _flash(src, causal: bool, tawac: bool, h: int, **options):
    consts = {"H": h, "BLOCK_M": 128, "BLOCK_N": 128, "D": D, "CAUSAL": causal}
    launch = _launcher(src.flash_fwd, src.SIGNATURE, consts, tawac, num_warps=8, **options)

    def call(q, k, v, o):
        z, hh, n, _ = q.shape
        strides = [*q.stride(), *k.stride(), *v.stride(), *o.stride()]
        launch((math.ceil(n / 128), z * hh), q, k, v, o, 1 / math.sqrt(D), n, *strides)

    return call


def _gqa(src, tawac: bool, g: int, **options):
    consts = {"G": g, "BLOCK_M": 64, "BLOCK_N": 128, "D": D}
    launch = _launcher(src.gqa_fwd, src.GQA_SIGNATURE, consts, tawac, num_warps=4, **options)

    def call(q, k, v, o):
        b, h, rows, _ = q.shape
        strides = [*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3]]
        args = (q, k, v, o, 1 / math.sqrt(D), rows, k.shape[2], *strides)
        launch((math.ceil(rows / 64), h, b), *args)

    return call


def _sdpa(causal: bool):
    import torch

    def call(q, k, v, o):
        o.copy_(
            torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=causal, enable_gqa=q.shape[1] != k.shape[1]
            )
        )

    return call


def _row(name: str, systems: dict, q, k, v, causal: bool, rounds: int, flops: float) -> bool:
    import torch

    from tawac.runtime.runner import bench_ms, round_robin

    ref = _reference(q, k, v, causal)
    outs = {}
    for s, fn in systems.items():
        o = torch.full_like(q, float("nan"))
        fn(q, k, v, o)
        torch.cuda.synchronize()
        err = (o.float() - ref).abs().max().item()
        if not err < 2e-2:
            print(f"{s} at {name}: wrong result (max error {err})")
            return False
        outs[s] = o
    names = list(systems)
    samples: dict[str, list[float]] = {s: [] for s in names}
    for i in round_robin(len(names), rounds):
        s = names[i]
        o = outs[s]
        samples[s].append(bench_ms(lambda f=systems[s], o=o: f(q, k, v, o), 25.0, 100.0)[0])
    ms = {s: statistics.median(v) for s, v in samples.items()}
    cells = [f"{ms[s]:.4f} ({flops / ms[s] / 1e9:.0f})" for s in names]
    ratio = ms["triton"] / ms["tawac.triton"]
    print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    return True


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", default="4x32x4096,2x32x8192")
    gqa = "8x32x4x1x8192,8x32x4x16x8192,1x32x4x1x32768,1x32x8x1x131072,32x32x8x4x8192"
    ap.add_argument("--gqa", default=gqa)
    args = ap.parse_args(argv)
    src = _source()
    dev = torch.cuda.get_device_name(0)
    day = datetime.date.today()
    print(f"# user-style Triton attention, bf16, d={D}: Triton vs tawac, same source, {day}, "
          f"{dev}; {args.rounds} rounds, medians (ms, TFLOP/s)")  # fmt: skip
    for causal in (False, True):
        print(f"\n## flash_fwd{' (causal)' if causal else ''}")
        print("| Z x H x N | triton | tawac.triton | sdpa | masks unguarded | "
              "tawac.triton / triton |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|")
        for shape in (s for s in args.shapes.split(",") if s):
            z, h, n = (int(x) for x in shape.split("x"))
            torch.manual_seed(0)
            q, k, v = (
                torch.randn(z, h, n, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)
            )
            systems = {
                "triton": _flash(src, causal, False, h),
                "tawac.triton": _flash(src, causal, True, h),
                "sdpa": _sdpa(causal),
                "unguarded": _flash(src, causal, True, h, guard_masks=False),
            }
            flops = 4.0 * z * h * n * n * D * (0.5 if causal else 1.0)
            if not _row(shape, systems, q, k, v, causal, args.rounds, flops):
                return 1
    print("\n## gqa_fwd (B x H x HK x query rows x keys)")
    print("| shape | triton | tawac.triton | sdpa | keys not split | tawac.triton / triton |")
    print("|---|---:|---:|---:|---:|---:|")
    for shape in (s for s in args.gqa.split(",") if s):
        b, h, hk, rows, keys = (int(x) for x in shape.split("x"))
        torch.manual_seed(0)
        q = torch.randn(b, h, rows, D, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, hk, keys, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        systems = {
            "triton": _gqa(src, False, h // hk),
            "tawac.triton": _gqa(src, True, h // hk),
            "sdpa": _sdpa(False),
            "no split": _gqa(src, True, h // hk, split_k=1),
        }
        flops = 4.0 * b * h * rows * keys * D
        if not _row(shape, systems, q, k, v, False, args.rounds, flops):
            return 1
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("triton_unseen", main))
