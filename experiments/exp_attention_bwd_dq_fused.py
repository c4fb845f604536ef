"""(session nineteen, CPU) Whether `attention_bwd_dkdv_dq.mlir` (dQ fused into the dK/dV
pass by atomic adds) computes dQ, dK and dV as autograd does, in the interpreter, and what
the compiler says of it.

    python3 experiments/exp_attention_bwd_dq_fused.py [--s 200] [--d 128]

Prints each gradient's relative error against float32 autograd (the shipped forward and
preprocessing kernels give O, the log-sum-exp and delta), then the compiler's answer.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_attention_bwd import FORWARD, LOG2E, _inputs, _kernel, _reference  # noqa: E402

from tawac.compiler import compile_file  # noqa: E402
from tawac.driver import kernel_op  # noqa: E402
from tawac.runtime.interpret import interpret_launch  # noqa: E402
from tawac.support.diagnostics import CompileError  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "attention_bwd_dkdv_dq.mlir"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--s", type=int, default=200)
    ap.add_argument("--d", type=int, default=128)
    args = ap.parse_args()
    s, d, b, h = args.s, args.d, 1, 2
    q, k, v, do = _inputs(b, h, s, d, "cpu")
    scale = 1 / math.sqrt(d)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s), float("nan"))
    interpret_launch(_kernel(FORWARD["full"], d), [q, k, v, o, lse, scale * LOG2E])
    delta = torch.full((b, h, s), float("nan"))
    interpret_launch(_kernel("attention_bwd_pre", d), [o, do, delta])
    dq = torch.zeros(b, h, s, d)
    dk, dv = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
    kernel = kernel_op(SOURCE, params={"HEAD_DIM": d})
    interpret_launch(kernel, [q, k, v, do, lse, delta, dq, dk, dv, scale * LOG2E])
    _, want_dq, want_dk, want_dv = _reference(q, k, v, do, scale)
    for name, got, want in (("dq", dq, want_dq), ("dk", dk, want_dk), ("dv", dv, want_dv)):
        print(f"{name}: relative error {float((got.float() - want).norm() / want.norm()):.2e}")
    try:
        compile_file(SOURCE, params={"HEAD_DIM": d}, cubin=False)
        print("compiles")
    except CompileError as e:
        print(f"refused: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
