"""Experiment: the tensor maps' L2 promotion (cuTensorMapEncodeTiled's l2Promotion) per
kind of row. Each case runs through `tawac.torch` (shipped tuning tables) with its own
tensors under each promotion (`HOPPER.l2_promotion_aligned` / `_misaligned` overridden
while the call encodes its maps), and cuBLAS / SDPA on the same inputs. Same run,
round-robin medians (us); each tawac result checked against a float32 reference.

- misaligned: GEMMs whose K rows are 16 but not 32 bytes (bf16 K = 3000, 5000), and the
  4096 x 6144 x 3000 default tile with 2x1 / 1x2 clusters;
- aligned: a square GEMM, decode GEMMs (B read from memory) and d128 prefill attention.

    python3 experiments/exp_l2_promotion.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MISALIGNED = ("5000x5000x5000", "3000x3000x3000", "4000x6000x3000", "4096x6144x3000")
ALIGNED = ("4096x4096x4096", "16x4096x14336", "128x8192x8192", "64x14336x4096")
PROMOTIONS = ("L2_256B", "L2_128B", "NONE")
LOG2E = 1.4426950408889634


def main() -> int:
    import torch
    import torch.nn.functional as F

    import tawac.torch as tt
    from tawac.runtime.runner import bench_ms, round_robin
    from tawac.target.hopper import overridden

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--set", choices=("all", "gemm", "attention"), default="all")
    args = p.parse_args()
    gemm = tt.kernel(ROOT / "examples/gemm.mlir")
    clustered = {
        c: tt.kernel(ROOT / "examples/gemm.mlir", tuning=None, cluster=c) for c in ("2x1", "1x2")
    }
    systems, checks = {}, {}

    def add(name, field, promotion, call, make, ref):
        inputs = make()
        fields = {field: promotion}

        def run(call=call, inputs=inputs, fields=fields):
            with overridden(fields):
                return call(*inputs)

        systems[name] = run
        checks[name] = (run, inputs, ref)

    def bf16(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    def gemm_ref(a, b, *_):
        return a.float() @ b.float().T

    gemm_shapes = (
        []
        if args.set == "attention"
        else [(s, "l2_promotion_misaligned") for s in MISALIGNED]
        + [(s, "l2_promotion_aligned") for s in ALIGNED]
    )
    for shape, field in gemm_shapes:
        m, n, k = (int(x) for x in shape.split("x"))

        def make(m=m, n=n, k=k):
            return bf16(m, k), bf16(n, k)

        for promotion in PROMOTIONS:
            add(f"{shape} {promotion}", field, promotion, gemm, make, gemm_ref)
        if shape == "4096x6144x3000":
            for c, kern in clustered.items():
                for promotion in PROMOTIONS[:2]:
                    add(f"{shape} 128x256 {c} {promotion}", field, promotion, kern, make, gemm_ref)
        a, b = make()
        systems[f"{shape} cuBLAS"] = lambda a=a, b=b: torch.mm(a, b.T)

    examples = {
        (128, False): "attention.mlir",
        (64, False): "attention_d64.mlir",
        (128, True): "attention_causal.mlir",
        (64, True): "attention_causal_d64.mlir",
    }
    for (d, causal), file in examples.items():
        if args.set != "attention" and (d, causal) != (128, False):
            continue
        attn = tt.kernel(ROOT / "examples" / file)
        for s in (4096, 16384) if args.set == "attention" else (16384,):
            b, h = max(1, 32768 // s), 16 if d == 128 else 32
            scale = d**-0.5
            label = f"attention d{d}{' causal' if causal else ''} {s // 1024}k"

            def make_qkv(b=b, h=h, s=s, d=d, scale=scale):
                return bf16(b, h, s, d), bf16(b, h, s, d), bf16(b, h, s, d), scale * LOG2E

            def attn_ref(q, k, v, _, causal=causal):
                return F.scaled_dot_product_attention(
                    q.float(), k.float(), v.float(), is_causal=causal
                )

            for promotion in PROMOTIONS:
                add(
                    f"{label} {promotion}",
                    "l2_promotion_aligned",
                    promotion,
                    attn,
                    make_qkv,
                    attn_ref,
                )
            q, k, v, _ = make_qkv()
            systems[f"{label} SDPA"] = lambda q=q, k=k, v=v, c=causal: (
                F.scaled_dot_product_attention(q, k, v, is_causal=c)
            )

    for name, (run, inputs, ref) in checks.items():
        out = run()
        torch.cuda.synchronize()
        expect = ref(*inputs)
        err = ((out.float() - expect).norm() / expect.norm()).item()
        assert err < 2e-2, (name, err)
    names = list(systems)
    samples = {x: [] for x in names}
    for i in round_robin(len(names), args.rounds):
        samples[names[i]].append(bench_ms(systems[names[i]], 25.0, 100.0)[0])
    print(f"# L2 promotion, {torch.cuda.get_device_name(0)}, median of {args.rounds} (us)")
    for x in names:
        print(f"| {x} | {statistics.median(samples[x]) * 1000:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
