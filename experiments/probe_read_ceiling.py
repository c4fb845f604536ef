"""Issue 22: the read ceiling of this GPU's memory. A Triton kernel that only reads (each
program sums a contiguous chunk of 16-byte vectors and writes one float) over the bytes
of a decode GEMM's B, at several chunk sizes and warp counts, next to torch's `sum` and
`copy_` and cuBLAS's `mm` at M = 1, same run, medians. Prints TB/s of the bytes read (a
copy: read + written).

    python3 experiments/probe_read_ceiling.py [NxK ...]   # default 4096x14336 8192x8192
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _reader():
    import triton
    import triton.language as tl

    @triton.jit
    def read(x_ptr, out_ptr, n, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        base = pid.to(tl.int64) * CHUNK
        acc = tl.zeros((BLOCK,), tl.float32)
        for i in range(0, CHUNK, BLOCK):
            offs = base + i + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        tl.store(out_ptr + pid, tl.sum(acc))

    def run(x, out, chunk, block, warps):
        n = x.numel()
        read[(triton.cdiv(n, chunk),)](x, out, n, CHUNK=chunk, BLOCK=block, num_warps=warps)

    return run


def main() -> None:
    import torch

    from tawac.runtime.runner import bench_ms

    print(torch.cuda.get_device_name(0))
    reader = _reader()
    shapes = [tuple(int(x) for x in a.split("x")) for a in sys.argv[1:]]
    for n, k in shapes or ((4096, 14336), (8192, 8192)):
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        a = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
        copy_out = torch.empty_like(b)
        nbytes = n * k * 2
        calls = {
            "sum": (lambda b=b: b.sum(dtype=torch.float32), 1),
            "copy": (lambda b=b, o=copy_out: o.copy_(b), 2),
            "mm (cuBLAS)": (lambda a=a, b=b: torch.mm(a, b.T), 1),
        }
        flat = b.view(-1)
        for chunk in (16384, 65536, 262144):
            for block, warps in ((2048, 4), (4096, 8), (8192, 8)):
                out = torch.empty(flat.numel() // chunk + 1, device="cuda")
                calls[f"triton chunk {chunk} block {block} warps {warps}"] = (
                    lambda f=flat, o=out, c=chunk, bl=block, w=warps: reader(f, o, c, bl, w),
                    1,
                )
        print(f"B {n}x{k} ({nbytes / 1e6:.0f} MB):")
        for name, (fn, times) in calls.items():
            fn()
            ms = statistics.median(bench_ms(fn, 10.0, 50.0)[0] for _ in range(3))
            tbs = nbytes * times / (ms * 1e-3) / 1e12
            print(f"  {name:40s} {tbs:.2f} TB/s ({ms * 1000:.1f} us)")


if __name__ == "__main__":
    main()
