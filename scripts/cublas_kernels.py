"""Which kernel cuBLAS (torch.mm, bf16) runs for each shape, by name (its tile, cluster
and decomposition are in the name), and its time: torch.profiler on the GPU.

    python3 scripts/cublas_kernels.py 3000x5000x2000 1000x1000x1000 ...
"""

from __future__ import annotations

import sys


def main() -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    for shape in sys.argv[1:]:
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
        for _ in range(5):
            torch.mm(a, b)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                torch.mm(a, b)
            torch.cuda.synchronize()
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or "gemm" in e.key.lower():
                t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
                print(f"{shape}: {e.key[:160]}  x{e.count}  {t:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
