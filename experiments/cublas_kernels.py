"""Which kernel cuBLAS (torch.mm, bf16) runs for each shape, by name (its tile, cluster
and decomposition are in the name), and its time: torch.profiler on the GPU.

    python3 experiments/cublas_kernels.py [--tawac] 3000x5000x2000 1000x1000x1000 ...

--tawac: also the kernels `tawac.torch` runs for examples/gemm.mlir with the shipped
tuning table (same inputs, same profiler), so kernel times compare without the launch
and flush that a timed call includes.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    args = sys.argv[1:]
    calls = {"cublas": lambda a, b: torch.mm(a, b.t())}
    if "--tawac" in args:
        args.remove("--tawac")
        import tawac.torch

        calls["tawac"] = tawac.torch.kernel(Path(__file__).parents[1] / "examples/gemm.mlir")
    for shape in args:
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for call in calls.values():
            for _ in range(5):
                call(a, b)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for call in calls.values():
                for _ in range(10):
                    call(a, b)
            torch.cuda.synchronize()
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or "gemm" in e.key.lower():
                t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
                print(f"{shape}: {e.key[:160]}  x{e.count}  {t:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
