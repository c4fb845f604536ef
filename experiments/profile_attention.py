"""One launch of an attention example for a profiler (ncu): `ncu -k regex:attention
--section SpeedOfLight --section WarpStateStats python3 experiments/profile_attention.py
[example.mlir [seq [batch [heads]]]]` (default attention.mlir, 4096, 2, 16; the planner
is the default one: TAWAC_SCHEDULE=solver profiles the solver's schedule)."""

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tawac.driver import compile_file  # noqa: E402
from tawac.runtime import load_kernel  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "attention.mlir"
d = 64 if "d64" in name else 128
r = compile_file(ROOT / "examples" / name)
kern = load_kernel(r.cubin, r.sidecar)
s = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
b = int(sys.argv[3]) if len(sys.argv) > 3 else 2
h = int(sys.argv[4]) if len(sys.argv) > 4 else 16
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
o = torch.empty_like(q)
kern(q, k, v, o, d**-0.5 * 1.4426950408889634)
torch.cuda.synchronize()
