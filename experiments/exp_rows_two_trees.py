"""The row examples (`benchmarks/bench_rows.py`'s rows: forward at the `table`
configuration, and the backward passes) under the compiler of a given tree: tawac, eager
torch and the copy only (Triton left out, torch.compile replaced by eager), to compare
two commits' code on one machine, one process per tree, back to back:

    git archive HEAD~1 tawac benchmarks examples | tar -x -C /tmp/old
    python3 experiments/exp_rows_two_trees.py /tmp/old before [KERNELS]
    python3 experiments/exp_rows_two_trees.py . after [KERNELS]

KERNELS: comma-separated (default rmsnorm,layernorm,rmsnorm_bwd,layernorm_bwd).

It ran on 2026-12-06 for the norms' 1-d loads streamed by the producer
(docs/perf/2026-12-06.md, "Norm weights and statistics through the ring")."""

import sys
from pathlib import Path

root = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(root / "benchmarks"))
sys.path.insert(0, str(root))
import bench_rows as b  # noqa: E402
import torch  # noqa: E402

import tawac  # noqa: E402

assert Path(tawac.__file__).resolve().is_relative_to(root), tawac.__file__
b._triton_backward = lambda *a, **k: {}
b._triton_systems = lambda *a, **k: {}
b._compiled = lambda f: f
torch.compile = lambda f, **k: f
kernels = sys.argv[3] if len(sys.argv) > 3 else "rmsnorm,layernorm,rmsnorm_bwd,layernorm_bwd"
for kernel in kernels.split(","):
    for shape in b.SHAPES[kernel]:
        if kernel.endswith("_bwd"):
            row = b._run_backward(kernel, shape, 3)
        else:
            row = b._run(kernel, shape, ["table"], 3)
        print(sys.argv[2], kernel, (row or "dropped").replace("\n", " "), flush=True)
