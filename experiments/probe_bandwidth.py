"""Issue 22: how fast can an H100 read a decode GEMM's B? torch's own streaming kernels
(a sum, a copy) against cuBLAS's GEMV-like GEMM on the same bytes, same run, medians.
Prints TB/s of the bytes read (a copy: read + written)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import torch

    from tawac.runtime.runner import bench_ms

    print(torch.cuda.get_device_name(0))
    for n, k in ((4096, 4096), (4096, 14336), (8192, 8192)):
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        a = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(n, k, device="cuda", dtype=torch.bfloat16)
        nbytes = n * k * 2
        calls = {
            "sum": lambda b=b: b.sum(dtype=torch.float32),
            "copy": lambda b=b, out=out: out.copy_(b),
            "mm (cuBLAS)": lambda a=a, b=b: torch.mm(a, b.T),
        }
        row = []
        for name, fn in calls.items():
            ms = statistics.median(bench_ms(fn, 10.0, 50.0)[0] for _ in range(3))
            moved = nbytes * (2 if name == "copy" else 1)
            row.append(f"{name} {moved / (ms * 1e-3) / 1e12:.2f} TB/s ({ms * 1000:.1f} us)")
        print(f"B {n}x{k} ({nbytes / 1e6:.0f} MB): " + ", ".join(row))


if __name__ == "__main__":
    main()
