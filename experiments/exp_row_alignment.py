"""Experiment: is the K = 3000 GEMM cliff the rows' 32-byte alignment? The default-tile
GEMM (`examples/gemm.mlir`) at 4096 x 6144 x K, bf16, with A and B (i) contiguous at
K = 3000 (6000-byte rows), (ii) K = 3000 as views of rows padded to 3008 elements
(6016 bytes, 32-byte aligned), (iii) contiguous at K = 3008; cuBLAS on (i). Same run,
round-robin medians (us); each result checked against a float32 reference.

    python3 experiments/exp_row_alignment.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    import torch

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel
    from tawac.runtime.runner import bench_ms, round_robin

    built = compile_cached(ROOT / "examples/gemm.mlir", cubin=True)
    gemm = load_kernel(built.cubin, json.loads(built.sidecar_text))
    m, n = 4096, 6144

    def operands(k: int, stride: int):
        a = torch.randn(m, stride, device="cuda", dtype=torch.bfloat16)[:, :k]
        b = torch.randn(n, stride, device="cuda", dtype=torch.bfloat16)[:, :k]
        return a, b

    cases = {
        "K=3000 contiguous": operands(3000, 3000),
        "K=3000 rows padded to 3008": operands(3000, 3008),
        "K=3008 contiguous": operands(3008, 3008),
    }
    systems = {}
    outs = {}
    for name, (a, b) in cases.items():
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        systems[name] = lambda a=a, b=b, c=c: gemm(a, b, c)
        outs[name] = (a, b, c)
    a0, b0 = cases["K=3000 contiguous"]
    c0 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    systems["cuBLAS, K=3000 contiguous"] = lambda: torch.mm(a0, b0.T, out=c0)
    outs["cuBLAS, K=3000 contiguous"] = (a0, b0, c0)
    for name, f in systems.items():
        f()
        torch.cuda.synchronize()
        a, b, c = outs[name]
        ref = a.float() @ b.float().T
        err = ((c.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (name, err)
    names = list(systems)
    samples = {x: [] for x in names}
    for i in round_robin(len(names), 5):
        samples[names[i]].append(bench_ms(systems[names[i]], 25.0, 100.0)[0])
    print(f"# 4096 x 6144 x K, bf16, 128x256 tiles, {torch.cuda.get_device_name(0)} (us)")
    for x in names:
        print(f"| {x} | {statistics.median(samples[x]) * 1000:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
