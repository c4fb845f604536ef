"""The norm backward passes (`benchmarks/bench_rows.py`'s backward rows) under the
planner of a given tree: tawac, eager torch and the copy only (Triton left out,
torch.compile replaced by eager), the slot-release fence stripped, to compare two
commits' plans on one machine, one process per tree:

    git archive b933c8a tawac benchmarks examples | tar -x -C /tmp/old
    python3 experiments/exp_rows_bwd_rule.py /tmp/old before
    python3 experiments/exp_rows_bwd_rule.py . after

It ran on an NVIDIA H100 on 2026-12-06 (docs/perf/2026-12-06.md, "Norm backward passes
under the row rule"; raw log docs/perf/data/rows-bwd-rule-h100-2026-12-06.log)."""

import sys
from pathlib import Path

root = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(root / "benchmarks"))
sys.path.insert(0, str(root))
import bench_rows as b  # noqa: E402

import tawac  # noqa: E402
import tawac.compiler as tc  # noqa: E402

_pm = tc.print_module
tc.print_module = lambda m: _pm(m).replace(
    "fence.proxy.async.shared::cta;\n\tbar.warp.sync -1;", "bar.warp.sync -1;"
)  # the rule's effect alone: without this session's fence

assert Path(tawac.__file__).resolve().is_relative_to(root), tawac.__file__
b._triton_backward = lambda *a, **k: {}
b._compiled = lambda f: f
import torch  # noqa: E402

torch.compile = lambda f, **k: f
for kernel in ("rmsnorm_bwd", "layernorm_bwd"):
    for shape in b.SHAPES[kernel]:
        row = b._run_backward(kernel, shape, 3)
        print(sys.argv[2], kernel, row.replace("\n", " "), flush=True)
